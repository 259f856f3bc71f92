"""torchbench_core: torch.utils.benchmark's API, measured by our own harness.

Flow: define (fuzzer, op_fuzzers, grouped, definitions) -> measure (timing,
clock, threads, callgrind, runner) -> record (task_spec, measurement, storage) -> compare.

`import torchbench_core as benchmark` stands in for
`from torch.utils import benchmark`. Importing this package does not import
torch: Measurement and Compare work in asv's host interpreter without it.
"""

from .clock import timer
from .compare import Colorize, Compare
from .fuzzer import FuzzedParameter, FuzzedSparseTensor, FuzzedTensor, Fuzzer, ParameterAlias
from . import callgrind
from .callgrind import CallgrindStats, CopyIfCallgrind, FunctionCount, FunctionCounts, collect_callgrind_many
from .measurement import Measurement, MeasurementFormatError
from .storage import load_measurements, save_measurements
from .task_spec import Language, TaskSpec
from .threads import set_torch_threads
from .timing import Timer
from .units import ordered_unique, select_unit, trim_sigfig, unit_to_english
from . import utils

__all__ = [
    "CallgrindStats",
    "CopyIfCallgrind",
    "FunctionCount",
    "FunctionCounts",
    "collect_callgrind_many",
    "Colorize",
    "Compare",
    "FuzzedParameter",
    "FuzzedSparseTensor",
    "FuzzedTensor",
    "Fuzzer",
    "Language",
    "Measurement",
    "MeasurementFormatError",
    "ParameterAlias",
    "TaskSpec",
    "Timer",
    "load_measurements",
    "ordered_unique",
    "save_measurements",
    "select_unit",
    "set_torch_threads",
    "timer",
    "trim_sigfig",
    "unit_to_english",
    "utils",
]
