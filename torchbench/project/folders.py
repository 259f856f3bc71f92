"""The folders a command works in: its output folder and environment folder, locked, and its repository."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import git

from . import commits, example, lock

__all__ = ["Folders", "locked_folders"]


@dataclass
class Folders:
    """A command's output folder and environment folder, both locked, and the repository it measures."""

    out: Path
    env_dir: Path
    fds: tuple[int, ...]  # the locks: children that must keep them get these
    repo_path: Path
    repo: git.Repo


@contextlib.contextmanager
def locked_folders(out: Path, env_dir: Path | None = None, repo: Path | None = None) -> Iterator[Folders]:
    """Lock OUT and its environment folder (default OUT/env) and open REPO (default: the embedded example,
    made under OUT)."""
    out = out.resolve()
    env_dir = (env_dir or out / "env").resolve()
    with lock.exclusive(out) as out_fd, lock.exclusive(env_dir, "environment folder", sweep=False) as env_fd:
        repo_path = repo.resolve() if repo else example.default_subject(out)
        yield Folders(out, env_dir, (out_fd, env_fd), repo_path, commits.open_repo(repo_path))
