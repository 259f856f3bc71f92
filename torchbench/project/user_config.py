"""The tracked repository's own asv configuration: found where asv users keep it, read with asv's own API.

asv users keep `asv.conf.json` at the repository's root, or in `benchmarks/`
(numpy), `asv_bench/` (pandas, xarray) or `benchmark/`; `--config FILE` names
another. Its paths (`repo`, `benchmark_dir`) are relative to the file, as asv
reads them (asv changes into the file's folder). The keys a run honours are
HONOURED; config.derive layers torchbench's own (the pinned torch, --torch, the
plugins, the output folders) on top of them and says so.
"""

from __future__ import annotations

import importlib.util
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError

__all__ = ["HONOURED", "PLACES", "UserConfig", "find_config", "read_config"]

PLACES = ("asv.conf.json", "benchmarks/asv.conf.json", "asv_bench/asv.conf.json", "benchmark/asv.conf.json")
# the keys of the user's configuration that a run takes as they are (the matrix is merged: config.derive)
HONOURED = ("build_command", "install_command", "uninstall_command", "branches", "show_commit_url", "project_url",
            "launch_method", "default_benchmark_timeout", "install_timeout", "repo_subdir")


@dataclass(frozen=True)
class UserConfig:
    """One asv.conf.json as asv reads it: `values` holds the keys the file sets (asv's defaults not filled in)."""

    path: Path
    values: dict

    @property
    def folder(self) -> Path:
        return self.path.parent

    def repo_path(self) -> Path | None:
        """The repository the file names (`repo`, relative to the file), or None where it names a URL."""
        repo = str(self.values.get("repo", "."))
        if "://" in repo or repo.startswith("git@"):
            return None
        return (self.folder / repo).resolve()

    def benchmark_dir(self) -> Path:
        return (self.folder / str(self.values.get("benchmark_dir", "benchmarks"))).resolve()

    def matrix(self) -> dict[str, dict]:
        """The matrix as {"req": {...}, "env": {...}, "env_nobuild": {...}}, asv's legacy flat form read as req."""
        from asv.environment import _parse_matrix

        try:
            parsed = _parse_matrix(self.values.get("matrix") or {})
        except Exception as e:  # asv's UserError: unknown keys in "matrix"
            raise UserError(f"{self.path}: {e}") from None
        out: dict[str, dict] = {}
        for (kind, key), value in parsed.items():
            out.setdefault(kind, {})[key] = value
        return out

    def environment_type(self) -> tuple[str, str | None]:
        """The environment type to use and, where it differs from the file's, the one line that says why."""
        asked = self.values.get("environment_type") or "virtualenv"
        if asked == "virtualenv":
            return asked, None
        present = (importlib.util.find_spec("rattler") is not None if asked == "rattler"
                   else shutil.which(asked) is not None)
        if present:
            return asked, None
        return "virtualenv", (f"environment_type {asked!r} ({self.path.name}): {asked} is not installed here, so "
                              "the environments are virtualenvs")


def find_config(root: Path, explicit: Path | None = None) -> Path | None:
    """The asv configuration of the repository at ROOT: EXPLICIT (--config), else the first of PLACES there."""
    if explicit is not None:
        path = explicit.expanduser().resolve()
        if not path.is_file():
            raise UserError(f"--config {explicit}: no such file")
        return path
    for place in PLACES:
        if (root / place).is_file():
            return (root / place).resolve()
    return None


def read_config(path: Path) -> UserConfig:
    """Read PATH with asv's own reader (json5: comments and trailing commas allowed; asv's checks: a version,
    a repo, some branches); a bad file is one UserError naming it."""
    from asv import util
    from asv.config import Config

    try:
        Config.load(str(path))  # asv's checks, as `asv run --config PATH` makes them
        values = util.load_json(str(path), Config.api_version, js_comments=True)
    except (util.UserError, ValueError, OSError) as e:
        raise UserError(f"{path}: not a usable asv configuration: {e}") from None
    return UserConfig(path, values)
