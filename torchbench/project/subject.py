"""Which repository a command tracks, and the one line that says which (asv's convention: the one you stand in).

In order: --example (the embedded example library); --repo; the repository
that --config's `repo` names; the git repository of the current folder; and
outside any repository, the example.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import git

from ..errors import UserError
from .user_config import read_config

__all__ = ["OUT_NAME", "Subject", "choose", "default_out", "repository_around"]

OUT_NAME = ".torchbench"


@dataclass(frozen=True)
class Subject:
    """The repository to track (None: the embedded example) and why it was chosen."""

    repo: Path | None
    config: Path | None
    line: str


def repository_around(folder: Path) -> Path | None:
    """The root of the git repository FOLDER is in, or None."""
    try:
        return Path(git.Repo(folder, search_parent_directories=True).working_tree_dir).resolve()
    except (git.InvalidGitRepositoryError, git.NoSuchPathError, TypeError):  # TypeError: a bare repository
        return None


def default_out(repo: Path | None) -> Path:
    """A command's output folder when --out is not given: .torchbench at the root of the tracked repository,
    wherever you stand in it (asv users keep their conf in benchmarks/ and run there); ./.torchbench for the
    embedded example."""
    return repo / OUT_NAME if repo is not None else Path(OUT_NAME)


def choose(repo: Path | None = None, *, example: bool = False, config: Path | None = None,
           cwd: Path | None = None) -> Subject:
    if example:
        if repo is not None or config is not None:
            raise UserError("--example tracks the embedded example library: give it without --repo and --config")
        return Subject(None, None, "== tracking the embedded example library (--example)")
    if repo is not None:
        return Subject(repo.expanduser().resolve(), config, f"== tracking {repo.expanduser().resolve()} (--repo)")
    if config is not None:
        named = read_config(config.expanduser().resolve()).repo_path()
        if named is not None:
            return Subject(named, config, f"== tracking {named} (the repo that {config} names)")
    here = repository_around(cwd or Path.cwd())
    if here is not None:
        return Subject(here, config, f"== tracking {here} (the git repository you are in; --example tracks the "
                                     "embedded example instead)")
    return Subject(None, config, "== tracking the embedded example library (not inside a git repository; --repo "
                                 "PATH tracks another)")
