"""torch.utils.benchmark.utils.common's names."""

from ..measurement import Measurement
from ..task_spec import TaskSpec
from ..threads import set_torch_threads
from ..units import ordered_unique, select_unit, trim_sigfig, unit_to_english

__all__ = ["TaskSpec", "Measurement", "select_unit", "unit_to_english", "trim_sigfig", "ordered_unique",
           "set_torch_threads"]
