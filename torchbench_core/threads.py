"""Pinning torch's intra-op thread count for the duration of a measurement."""

from __future__ import annotations

import sys
from types import ModuleType


class set_torch_threads:
    """Context manager: `torch.set_num_threads(n)` inside, the prior count after.

    A class rather than a @contextmanager generator because it sits on the
    fixed cost of every Timer call (about 1 us saved). Skips both calls when
    the count already matches: on platforms whose native pool can be sized
    only once (pytorch#58585) a redundant set must not be issued.
    """

    __slots__ = ("_n", "_torch", "_prior")

    def __init__(self, n: int, torch: ModuleType | None = None) -> None:
        if torch is None:
            torch = sys.modules.get("torch")
            if torch is None:
                import torch  # noqa: F811
        self._n = n
        self._torch = torch
        self._prior = -1

    def __enter__(self) -> None:
        prior = self._torch.get_num_threads()
        if prior != self._n:
            self._prior = prior
            self._torch.set_num_threads(self._n)

    def __exit__(self, *exc: object) -> None:
        if self._prior != -1:
            self._torch.set_num_threads(self._prior)
            self._prior = -1
