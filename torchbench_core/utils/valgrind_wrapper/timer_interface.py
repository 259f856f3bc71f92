"""torch.utils.benchmark.utils.valgrind_wrapper.timer_interface's names."""

from ...callgrind import CallgrindStats, CopyIfCallgrind, FunctionCount, FunctionCounts

__all__ = ["FunctionCount", "FunctionCounts", "CallgrindStats", "CopyIfCallgrind"]
