"""torch.utils.benchmark.utils.valgrind_wrapper."""

from . import timer_interface

__all__ = ["timer_interface"]
