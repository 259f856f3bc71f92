"""torch's instruction-count suite's ``core`` package, by name, over ours.

torch's definition files (``benchmarks/instruction_counts/definitions/standard.py`` and ``setup.py``)
import ``core.api``, ``core.api_impl``, ``core.types`` and ``core.utils``; with :data:`PATH` on
``sys.path`` they load unchanged, and ``core.expand.materialize`` expands them with our grouped API::

    sys.path[:0] = [torchbench_core.torch_suite.PATH, "<torch>/benchmarks/instruction_counts"]
    from definitions.standard import BENCHMARKS
    from core.expand import materialize
    cases = materialize(BENCHMARKS)

Every name is a re-export of ``torchbench_core.grouped`` (or ``task_spec``'s Language); nothing is copied.
"""

from pathlib import Path

PATH = str(Path(__file__).resolve().parent)  # the folder that holds ``core``

__all__ = ["PATH"]
