"""Which commits a run measures: a git range, the last N, or a hash file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import git

from .errors import UserError

__all__ = ["Commit", "open_repo", "resolve", "select"]


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str

    @property
    def short(self) -> str:
        return self.sha[:8]


def open_repo(path: Path) -> git.Repo:
    try:
        return git.Repo(path)
    except (git.NoSuchPathError, git.InvalidGitRepositoryError):
        raise UserError(f"{path}: not a git repository") from None


def resolve(repo: git.Repo, rev: str) -> Commit:
    """One revision (a name, tag or hash prefix) as a commit."""
    try:
        commit = repo.commit(rev)
    except (git.BadName, ValueError, git.GitCommandError):
        raise UserError(f"{repo.working_dir}: unknown revision {rev!r}") from None
    return Commit(commit.hexsha, commit.summary)


DEFAULT_LAST = 6


def add_selection_arguments(parser, verb: str) -> None:
    """RANGE, --repo, --last and --hashfile: how `run` and `profile` choose their commits."""
    parser.add_argument("range", nargs="?", metavar="RANGE",
                        help="git range A..B (first-parent commits of B not in A), or one revision")
    parser.add_argument("--repo", type=Path,
                        help="git repository to track (default: the embedded example library, made under OUT)")
    parser.add_argument("--last", type=int, default=None, metavar="N",
                        help=f"the last N first-parent commits of HEAD (default {DEFAULT_LAST})")
    parser.add_argument("--hashfile", type=Path, metavar="F", help=f"{verb} the commits listed in F, one per line")


def select_from_args(repo: git.Repo, args) -> list[Commit]:
    """The commits add_selection_arguments' options name (the last DEFAULT_LAST when none does)."""
    if sum(x is not None for x in (args.range, args.last, args.hashfile)) > 1:
        raise UserError("give one of RANGE, --last and --hashfile")
    return select(repo, range_=args.range, last=args.last if args.last is not None else DEFAULT_LAST,
                  hashfile=args.hashfile)


def select(repo: git.Repo, *, range_: str | None = None, last: int | None = None,
           hashfile: Path | None = None) -> list[Commit]:
    """The commits to measure, oldest first (first-parent history, as asv walks it)."""
    if hashfile is not None:
        try:
            revs = [line.split()[0] for line in hashfile.read_text().splitlines() if line.strip()]
        except OSError as e:
            raise UserError(f"{hashfile}: cannot read the hash file ({e.strerror})") from None
        if not revs:
            raise UserError(f"{hashfile}: the hash file lists no commits")
        return [resolve(repo, rev) for rev in revs]
    if range_ is not None:
        if ".." not in range_:
            return [resolve(repo, range_)]
        start, _, end = range_.partition("..")
        for rev in (start, end or "HEAD"):
            resolve(repo, rev)  # a clear error for a typo, before git's own
        commits = list(repo.iter_commits(range_, first_parent=True))
        if not commits:
            raise UserError(f"{repo.working_dir}: the range {range_} holds no commits")
    else:
        if last is None or last < 1:
            raise UserError(f"--last must be a positive number of commits, got {last}")
        try:
            commits = list(repo.iter_commits("HEAD", max_count=last, first_parent=True))
        except ValueError:
            raise UserError(f"{repo.working_dir}: the repository has no commits") from None
    return [Commit(c.hexsha, c.summary) for c in reversed(commits)]
