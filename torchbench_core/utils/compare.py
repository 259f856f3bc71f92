"""torch.utils.benchmark.utils.compare's names."""

from ..compare import Colorize, Compare

__all__ = ["Colorize", "Compare"]
