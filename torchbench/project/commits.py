"""Which commits a run measures: a git range, the last N, or a hash file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import git

from ..errors import UserError
from ..validate import POSITIVE_WHOLE, check_all

__all__ = ["DEFAULT_LAST", "Commit", "Selection", "default_branch", "open_repo", "resolve", "select"]


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str

    @property
    def short(self) -> str:
        return self.sha[:8]


def open_repo(path: Path) -> git.Repo:
    """The repository at PATH, with at least one commit (an empty one is refused before anything is built)."""
    try:
        repo = git.Repo(path)
    except (git.NoSuchPathError, git.InvalidGitRepositoryError):
        raise UserError(f"{path}: not a git repository") from None
    if not repo.head.is_valid():
        raise UserError(f"{path}: the repository has no commits yet; commit the project and its benchmarks first")
    return repo


def default_branch(repo: git.Repo) -> str:
    """The repository's default branch: the one its origin's HEAD names (a clone's), else the branch checked
    out, else "HEAD" (a detached checkout, as CI makes). Not asv's fallback, the git setting init.defaultBranch
    or "master", which names no branch of a repository whose default is main, trunk or develop."""
    try:
        ref = repo.git.symbolic_ref("--quiet", "--short", "refs/remotes/origin/HEAD")
        return ref.split("/", 1)[1]
    except (git.GitCommandError, IndexError):
        pass
    try:
        return repo.active_branch.name
    except TypeError:  # detached HEAD
        return "HEAD"


def resolve(repo: git.Repo, rev: str) -> Commit:
    """One revision (a name, tag or hash prefix) as a commit."""
    try:
        commit = repo.commit(rev)
    except (git.BadName, ValueError, git.GitCommandError):
        raise UserError(f"{repo.working_dir}: unknown revision {rev!r}") from None
    return Commit(commit.hexsha, commit.summary)


DEFAULT_LAST = 6


@dataclass(frozen=True)
class Selection:
    """Which commits: a git range (A..B, or one revision), the last N first-parent commits of HEAD, or the
    commits listed in a file. At most one; none means the last DEFAULT_LAST."""

    range: str | None = None
    last: int | None = None
    hashfile: Path | None = None

    RULES = {"last": (lambda v: v is None or POSITIVE_WHOLE[0](v), POSITIVE_WHOLE[1])}

    def __post_init__(self):
        if sum(x is not None for x in (self.range, self.last, self.hashfile)) > 1:
            raise UserError("give one of RANGE, --last and --hashfile")
        check_all(self)

    @property
    def given(self) -> bool:
        return any(x is not None for x in (self.range, self.last, self.hashfile))


def select(repo: git.Repo, selection: Selection = Selection()) -> list[Commit]:
    """The commits to measure, oldest first (first-parent history, as asv walks it)."""
    range_, hashfile = selection.range, selection.hashfile
    last = selection.last if selection.last is not None else DEFAULT_LAST
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
        try:
            commits = list(repo.iter_commits("HEAD", max_count=last, first_parent=True))
        except ValueError:
            raise UserError(f"{repo.working_dir}: the repository has no commits") from None
    return [Commit(c.hexsha, c.summary) for c in reversed(commits)]
