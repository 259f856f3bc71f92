"""conda's package names as pip knows them: an asv matrix written for conda, run in virtualenvs.

Many torch libraries write their asv configuration for conda (`environment_type: conda`, a matrix of conda's
names: `pytorch`, `pytorch-cuda`, `pytorch-scatter`). Where conda is absent the environments are virtualenvs
(UserConfig.environment_type), and pip's `pytorch` is a placeholder that fails to build by design. The map is
data, in one place (conda_names.json): `rename` gives pip's name of a conda package, `drop` the conda
selectors and system libraries that pip has no package for, with why. A name in neither is taken as it is.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

__all__ = ["CondaNames", "load", "normalise", "to_pip"]

DATA = Path(__file__).with_name("conda_names.json")


def normalise(name: str) -> str:
    """Package names compare as pip compares them (PEP 503): lowercase, '-', '_' and '.' alike."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class CondaNames:
    rename: dict[str, str] = field(default_factory=dict)
    drop: dict[str, str] = field(default_factory=dict)


@cache
def load(path: Path = DATA) -> CondaNames:
    doc = json.loads(path.read_text())
    return CondaNames({normalise(k): v for k, v in doc["rename"].items()}, {normalise(k): v for k, v in doc["drop"].items()})


def to_pip(req: dict[str, object], names: CondaNames | None = None) -> tuple[dict[str, object], list[str]]:
    """A matrix's `req` with conda's names made pip's, and one line for what changed (none when nothing did).
    Two conda names that become one pip name keep the first's version."""
    names = names or load()
    out: dict[str, object] = {}
    renamed, dropped = [], []
    for name, version in req.items():
        key = normalise(name)
        if key in names.drop:
            dropped.append(f"{name} ({names.drop[key]})")
            continue
        pip_name = names.rename.get(key, name)
        if normalise(pip_name) != key:
            renamed.append(f"{name} -> {pip_name}")
        if not any(normalise(k) == normalise(pip_name) for k in out):
            out[pip_name] = version
    lines = []
    if renamed or dropped:
        lines.append("conda's names in the matrix, as pip knows them: "
                     + "; ".join(filter(None, [", ".join(renamed), "left out: " * bool(dropped) + ", ".join(dropped)])))
    return out, lines
