"""The embedded default subject: a small library on torch, shipped as a patch series.

tensorlib/patches/*.patch (package data, beside this module) are applied with `git am` to a fresh
repository, with a fixed committer and the authors' dates, so the commit
hashes are the same on every machine and every run (results from earlier
runs stay attached to the right commits). See tensorlib/README.md
for what each commit does to the measured code.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import git

from .. import resources
from ..errors import UserError

__all__ = ["default_subject", "materialize"]

COMMITTER = {"GIT_COMMITTER_NAME": "torchbench example", "GIT_COMMITTER_EMAIL": "example@torchbench.invalid"}


def _patches() -> list[Path]:
    patches = sorted(resources.example_patches().glob("*.patch"))
    if not patches:
        raise UserError(f"{resources.example_patches()}: the example's patch series is missing")
    return patches


def materialize(dest: Path) -> Path:
    """The example repository at `dest`, made (or remade) from the patch series."""
    patches = _patches()
    if dest.exists():
        try:
            repo = git.Repo(dest)
            if len(list(repo.iter_commits("HEAD"))) == len(patches) and not repo.is_dirty(untracked_files=True):
                return dest
        except (git.InvalidGitRepositoryError, git.NoSuchPathError, ValueError, git.GitCommandError):
            pass
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    repo = git.Repo.init(dest, initial_branch="main")
    with repo.config_writer() as cw:
        cw.set_value("user", "name", COMMITTER["GIT_COMMITTER_NAME"])
        cw.set_value("user", "email", COMMITTER["GIT_COMMITTER_EMAIL"])
        cw.set_value("commit", "gpgsign", "false")
    try:
        with repo.git.custom_environment(**COMMITTER):
            repo.git.am("--quiet", "--committer-date-is-author-date", *map(str, patches))
    except git.GitCommandError as e:
        raise UserError(f"applying the example's patch series to {dest} failed: {e.stderr.strip()}") from None
    return dest


def default_subject(out: Path) -> Path:
    """The repository a command tracks when it is given no --repo: the example, under OUT."""
    return materialize(out / "example" / "tensorlib")
