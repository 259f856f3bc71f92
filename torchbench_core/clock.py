"""The clock a Timer reads, and accelerator synchronisation.

torch.utils.benchmark's default `timer()` asks `torch.accelerator.is_available()`
on every read (about 690 ns here). We decide once per process: on a CPU-only
machine the clock is `time.perf_counter` itself; with an accelerator it is a
clock that synchronises the device first, so a block's time covers the
kernels it queued.
"""

from __future__ import annotations

import sys
import time
from typing import Callable

_resolved: Callable[[], float] | None = None


def _find_synchronize() -> Callable[[], None] | None:
    """The device synchronise function of the torch in this process, if any.

    Works across torch versions, because history runs old ones too:
    `torch.accelerator` exists from 2.6; before that only CUDA is known.
    """
    torch = sys.modules.get("torch")
    if torch is None:
        try:
            import torch  # noqa: F811  (deferred: the publisher has no torch)
        except ImportError:
            return None
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None and hasattr(accelerator, "is_available"):
        if accelerator.is_available():
            return accelerator.synchronize
        return None
    if torch.cuda.is_available():
        return torch.cuda.synchronize
    return None


def _make_clock() -> Callable[[], float]:
    synchronize = _find_synchronize()
    if synchronize is None:
        return time.perf_counter
    perf_counter = time.perf_counter

    def synchronized_clock() -> float:
        synchronize()
        return perf_counter()

    return synchronized_clock


def default_clock() -> Callable[[], float]:
    """The clock `timer()` stands for, resolved once per process."""
    global _resolved
    if _resolved is None:
        _resolved = _make_clock()
    return _resolved


def timer() -> float:
    """Default Timer clock: seconds, accelerator-synchronised where one exists.

    Timer never calls this wrapper in its loop; it resolves it to
    `default_clock()` first. It exists for callers who read the clock by hand
    (and for signature compatibility with torch.utils.benchmark.timer).
    """
    return (_resolved or default_clock())()

