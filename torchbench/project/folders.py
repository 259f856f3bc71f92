"""The folders a command works in: its output folder and environment folder, locked, and its repository."""

from __future__ import annotations

import contextlib
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import git

from . import commits, example, lock
from .user_config import UserConfig, find_config, read_config

__all__ = ["Folders", "locked_folders"]


@dataclass
class Folders:
    """A command's output folder and environment folder, both locked, the repository it measures, and that
    repository's own asv configuration (None: it has none)."""

    out: Path
    env_dir: Path
    fds: tuple[int, ...]  # the locks: children that must keep them get these
    repo_path: Path
    repo: git.Repo
    config: UserConfig | None = None


def _made_for_nothing(folder: Path, existed: bool) -> None:
    """After a failure: the lock file goes, and a folder this command created goes when nothing else is in it
    (an environment folder it created goes whole: environments made for a command that failed)."""
    (folder / lock.LOCK_NAME).unlink(missing_ok=True)
    if not existed:
        with contextlib.suppress(OSError):
            folder.rmdir()


@contextlib.contextmanager
def locked_folders(out: Path, env_dir: Path | None = None, repo: Path | None = None,
                   config: Path | None = None) -> Iterator[Folders]:
    """Lock OUT and its environment folder (default OUT/env) and open REPO (default: the embedded example,
    made under OUT) with its asv configuration (CONFIG, else found where asv users keep it).

    A command that fails (raises) removes the locks and the folders it created for nothing."""
    out = out.resolve()
    env_dir = (env_dir or out / "env").resolve()
    existed = {out: out.exists(), env_dir: env_dir.exists()}
    with lock.exclusive(out) as out_fd, lock.exclusive(env_dir, "environment folder", sweep=False) as env_fd:
        try:
            repo_path = repo.resolve() if repo else example.default_subject(out)
            opened = commits.open_repo(repo_path)
            found = find_config(repo_path, config)
            yield Folders(out, env_dir, (out_fd, env_fd), repo_path, opened, read_config(found) if found else None)
        except BaseException:
            if not existed[env_dir]:
                shutil.rmtree(env_dir, ignore_errors=True)
            else:
                _made_for_nothing(env_dir, True)
            _made_for_nothing(out, existed[out])
            raise
