"""torch.utils.benchmark.utils.timer's names."""

from ..clock import timer
from ..task_spec import Language
from ..timing import Timer

__all__ = ["Timer", "timer", "Language"]
