"""Where a command measures: the derived asv config, its environment, and commits installed side by side.

`run` lets asv build and install each commit in turn. `alert` and `profile`
need several commits importable from one environment at once, so each
commit is exported (git archive) and installed into its own folder
(OUT/sites/<sha12>), which a process puts on PYTHONPATH. Both are made in a
temporary folder and renamed into place, so an interrupted export or
install is never mistaken for a whole one and is redone next time.
"""

from __future__ import annotations

import contextlib
import shutil
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from . import commits, config, example, lock
from .asv_driver import Asv, Timings, install_commit

__all__ = ["Folders", "Workspace", "locked_folders", "open_workspace"]


@dataclass
class Folders:
    """A command's output folder and environment folder, both locked, and the repository it measures."""

    out: Path
    env_dir: Path
    fds: tuple[int, ...]  # the locks: children that must keep them get these
    repo_path: Path
    repo: object  # git.Repo


@contextlib.contextmanager
def locked_folders(args) -> Iterator[Folders]:
    """Lock args.out and its environment folder (args.env_dir, default OUT/env) and open args.repo (default:
    the embedded example, made under OUT), for alert, find and profile."""
    out = args.out.resolve()
    env_dir = (args.env_dir or out / "env").resolve()
    with lock.exclusive(out) as out_fd, lock.exclusive(env_dir, "environment folder", sweep=False) as env_fd:
        repo_path = args.repo.resolve() if args.repo else example.default_subject(out)
        yield Folders(out, env_dir, (out_fd, env_fd), repo_path, commits.open_repo(repo_path))


@dataclass
class Workspace:
    out: Path
    env_dir: Path
    repo_path: Path
    repo: object  # git.Repo
    project: config.Project
    bench_dir: Path
    conf: Path
    asv: Asv
    _pythons: list[Path] = field(default_factory=list)

    def pythons(self) -> list[Path]:
        """The asv environments' interpreters, set up and given the project's build dependencies."""
        if not self._pythons:
            self._pythons = self.asv.setup(self.env_dir)
            self.asv.prepare(self._pythons, self.project)
        return self._pythons

    def export(self, sha: str) -> Path:
        """The commit's tree, as files, to build from."""
        dest = self.out / "src" / sha[:12]
        if dest.exists():
            return dest
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
        with tempfile.TemporaryFile() as f:
            self.repo.archive(f, treeish=sha, format="tar")
            f.seek(0)
            with tarfile.open(fileobj=f) as tar:
                tar.extractall(tmp, filter="data")
        tmp.rename(dest)
        return dest

    def site(self, commit: commits.Commit, python: Path) -> tuple[Path | None, str | None]:
        """The folder holding `commit` installed (built once, then reused); or None and why it failed."""
        site = self.out / "sites" / commit.sha[:12]
        if site.exists():
            return site, None
        print(f"== building {commit.short} ({commit.subject[:50]})", flush=True)
        partial = site.with_name(f".{site.name}.partial")
        shutil.rmtree(partial, ignore_errors=True)
        why = install_commit(python, self.export(commit.sha), partial)
        if why:
            return None, why
        partial.rename(site)
        return site, None


def open_workspace(*, out: Path, env_dir: Path, repo_path: Path, repo, project_sha: str,
                   benchmarks: Path | None, fds: tuple[int, ...], timings: Timings | None = None,
                   torch_build: bool = False) -> Workspace:
    """Derive OUT/asv.conf.json for the repository (project read at `project_sha`) and its suites."""
    project = config.read_project(repo, project_sha, repo_path.name)
    bench_dir = config.benchmark_dir(repo_path, benchmarks, torch_build=torch_build)
    conf = config.derive(repo=repo_path, project=project, out=out, env_dir=env_dir, benchmark_dir=bench_dir)
    return Workspace(out=out, env_dir=env_dir, repo_path=repo_path, repo=repo, project=project,
                     bench_dir=bench_dir, conf=conf, asv=Asv(conf, timings or Timings(), keep_fds=fds))
