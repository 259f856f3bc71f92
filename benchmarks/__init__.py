"""torchbench's own asv suites, measured by torchbench_core.

The harness is the torchbench_core of the torchbench that runs asv, loaded
ahead of whatever copy the commit under test installed, so a history moves
when the measured code changes, never when the harness does. `torchbench
run` names that package folder in TORCHBENCH_HARNESS (asv 0.6.6 drops
ASV_PYTHONPATH on its way to benchmark processes); a plain `asv run` at this
repository's root is covered by ASV_CONF_DIR. This matters when the tracked
project is this repository, whose commits install their own torchbench_core.

Only that one package is loaded from the harness's folder: putting the
folder's parent on sys.path would expose everything installed beside it
(a venv's whole site-packages, when torchbench is installed from a wheel).
"""

import importlib.util
import os
import sys


def _load_torchbench_core() -> None:
    conf_dir = os.environ.get("ASV_CONF_DIR")
    for folder in (os.environ.get("TORCHBENCH_HARNESS"), conf_dir and os.path.join(conf_dir, "torchbench_core")):
        init = folder and os.path.join(folder, "__init__.py")
        if init and os.path.isfile(init):
            spec = importlib.util.spec_from_file_location("torchbench_core", init,
                                                          submodule_search_locations=[folder])
            module = importlib.util.module_from_spec(spec)
            sys.modules["torchbench_core"] = module
            spec.loader.exec_module(module)
            return


if "torchbench_core" not in sys.modules:
    _load_torchbench_core()
