"""Where a side's processes run: the environment that imports its installation, and the folder of its asv
setup_cache values. Shared by the rounds of wall time (rounds.py), the counting and tracing (collect.py)
and the commands that list or profile a side's suite."""

from __future__ import annotations

from pathlib import Path

from ..asv_bridge.driver import install_env
from .evidence import Side

__all__ = ["setup_cache_of", "side_env"]


def setup_cache_of(cache_dir: Path, side: Side) -> Path:
    """The folder of a side's asv setup_cache values, made once and read by every process of the side (its
    plan, its valgrind processes and its rounds). Never shared between sides: asv keys a value by the
    function's place in the suite, the same on both sides, while the value is the side's own (a C++ program
    compiled against the side's torch)."""
    folder = cache_dir / side.name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def side_env(side: Side) -> dict[str, str]:
    """The environment of a process that imports this side's installation."""
    return install_env(side.install)
