"""Human-facing number formatting shared by Measurement and Compare.

Pure Python on purpose: the publisher runs in asv's host interpreter, which
need not have torch (torch.utils.benchmark routes these through torch.tensor).
"""

from __future__ import annotations

import math
from typing import Any, Iterable

# Exponent of 1000 -> unit. torch.utils.benchmark stops at "ns" and prints
# "0.00 s" for anything faster; "ps" keeps sub-nanosecond values readable.
_UNITS = {-4: ("ps", 1e-12), -3: ("ns", 1e-9), -2: ("us", 1e-6), -1: ("ms", 1e-3)}
_ENGLISH = {
    "ps": "picosecond",
    "ns": "nanosecond",
    "us": "microsecond",
    "ms": "millisecond",
    "s": "second",
}


def select_unit(t: float) -> tuple[str, float]:
    """Unit and scale that make `t` (seconds) an O(1)-O(999) number."""
    if not t > 0 or not math.isfinite(t):
        return "s", 1.0
    exponent = int(math.floor(math.log10(t)) // 3)
    if exponent < -4:
        exponent = -4
    return _UNITS.get(exponent, ("s", 1.0))


def unit_to_english(unit: str) -> str:
    return _ENGLISH[unit]


def trim_sigfig(x: float, n: int) -> float:
    """Round `x` to `n` significant figures (3.14159, 2 -> 3.1).

    Decimal rounding in float64; torch rounds through float32 and returns
    artefacts such as 3.1000001430511475.
    """
    if n != int(n):
        raise ValueError(f"Number of significant figures must be an integer, got {n!r}")
    if x == 0 or not math.isfinite(x):
        return x
    magnitude = math.ceil(math.log10(abs(x)))
    return round(x, int(n) - magnitude)


def ordered_unique(elements: Iterable[Any]) -> list[Any]:
    return list(dict.fromkeys(elements))
