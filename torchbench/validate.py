"""Rules for the fields of typed options, checked when an option object is made.

Each options dataclass (ab.options.Policy and Rounds, history.run.HistoryOptions,
profiling.record.ProfileOptions, project.commits.Selection) names a rule per
checked field in its RULES and calls `check_all` in __post_init__; the
command line checks each flag by the same rule (cli.options.checked), so the
API and the CLI refuse the same values with the same words.
"""

from __future__ import annotations

import math
from dataclasses import fields
from typing import Callable

from .errors import UserError

__all__ = ["AT_LEAST_TWO", "FRACTION", "NON_NEGATIVE", "POSITIVE", "POSITIVE_WHOLE", "Rule", "SCHEDULE", "SCHEDULES", "UNDECIDED_EXIT", "check",
           "check_all"]


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


FRACTION = (lambda v: _number(v) and 0 < v < 1, "must be between 0 and 1 (exclusive)")
NON_NEGATIVE = (lambda v: _number(v) and v >= 0, "must be a number >= 0")
POSITIVE = (lambda v: _number(v) and v > 0, "must be a number > 0")
POSITIVE_WHOLE = (lambda v: _whole(v) and v >= 1, "must be a whole number >= 1")
AT_LEAST_TWO = (lambda v: _whole(v) and v >= 2, "must be a whole number >= 2 (a verdict needs 2 processes a side)")
UNDECIDED_EXIT = (lambda v: _whole(v) and v in (0, 3),
                  "must be 0 (pass) or 3 (inconclusive): 1 is a regression's alone, 2 a failure's")
SCHEDULES = ("auto", "alternating", "duet")  # ab/design_choice.py: auto tries both, goes on with the better
SCHEDULE = (lambda v: v in SCHEDULES, "must be alternating or duet, or auto (both tried, the better kept)")
# a field's rule: (predicate, what it must be)
Rule = tuple[Callable[[object], bool], str]


def check(cls, name: str, value) -> None:
    """Raise UserError("NAME must be ..., not VALUE") unless VALUE passes the rule of cls's field NAME."""
    ok, must = cls.RULES[name]
    if not ok(value):
        raise UserError(f"{name} {must}, not {value!r}")


def check_all(obj) -> None:
    for f in fields(obj):
        if f.name in obj.RULES:
            check(type(obj), f.name, getattr(obj, f.name))


