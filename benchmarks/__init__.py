"""asv benchmark suites, measured by torchbench_core.

The harness is torchbench_core from the working tree that runs asv, put
ahead of whatever copy the commit under test installed, so a history moves
when the measured code changes, never when the harness does.
`torchbench run` names the tree in TORCHBENCH_HARNESS (asv 0.6.6 drops
ASV_PYTHONPATH on its way to benchmark processes); a plain `asv run` at the
repository root is covered by ASV_CONF_DIR. This matters when the tracked
project is this repository, whose commits install their own torchbench_core.
"""

import os
import sys

for _root in (os.environ.get("TORCHBENCH_HARNESS"), os.environ.get("ASV_CONF_DIR")):
    if _root and os.path.isdir(os.path.join(_root, "torchbench_core")):
        if _root not in sys.path:
            sys.path.insert(0, _root)
        break
