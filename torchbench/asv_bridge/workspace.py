"""Where a command measures: the derived asv config, its environment, and commits installed side by side.

`run` lets asv build and install each commit in turn. `alert` and `profile`
need several commits importable from one environment at once, so each
commit is exported (git archive) and installed into its own folder
(OUT/installs/<sha12>), which a process puts on PYTHONPATH. Both are made in a
temporary folder and renamed into place, so an interrupted export or
install is never mistaken for a whole one and is redone next time.
"""

from __future__ import annotations

import json
import os
import shutil
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import git

from ..project import commits, config
from ..project.user_config import UserConfig
from torchbench_core.skips import LEFT_OUT_ENV

from .driver import Asv, PipIndex, Timings, install_commit

__all__ = ["Workspace", "open_workspace"]


@dataclass
class Workspace:
    out: Path
    env_dir: Path
    repo_path: Path
    repo: git.Repo
    project: config.Project
    bench_dir: Path
    conf: Path
    asv: Asv
    config: UserConfig | None = None  # the repository's own asv configuration, layered under ours
    _pythons: list[Path] = field(default_factory=list)

    def pythons(self) -> list[Path]:
        """The asv environments' interpreters, set up and given the project's build dependencies."""
        if not self._pythons:
            self.asv.ensure_machine()
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

    def install(self, commit: commits.Commit, python: Path) -> tuple[Path | None, str | None]:
        """The folder holding `commit` installed for `python` (built once, then reused); or None and why it
        failed. The first environment's installs are OUT/installs/<sha12>; another environment's (another
        torch release, which a compiled extension is built against) have its folder's name appended."""
        first = self.pythons()[0]
        suffix = "" if python == first else f"-{python.parent.parent.name[:8]}"
        folder = self.out / "installs" / f"{commit.sha[:12]}{suffix}"
        if folder.exists():
            return folder, None
        print(f"== building {commit.short} ({commit.subject[:50]})", flush=True)
        partial = folder.with_name(f".{folder.name}.partial")
        shutil.rmtree(partial, ignore_errors=True)
        user = self.config.values if self.config else {}
        src = self.export(commit.sha) / str(user.get("repo_subdir", "")).strip("/")
        why = install_commit(python, src, partial, build_command=user.get("build_command"))
        if why:
            return None, why
        partial.rename(folder)
        return folder, None


def _matrix_environment(user: UserConfig | None) -> list[str]:
    """The matrix's environment variables (`env`, `env_nobuild`) for the processes torchbench starts itself
    (alert, profile, counts), as asv sets them for its own: taken where the matrix gives one value (a list of
    values makes several environments, which only `torchbench run` measures one by one)."""
    if user is None:
        return []
    single = {k: str(v) for kind in ("env", "env_nobuild") for k, v in user.matrix().get(kind, {}).items()
              if isinstance(v, (str, int, float))}
    for key, value in single.items():
        os.environ[key] = value  # this process is the command's: its workers inherit it (driver.harness_env)
    return [f"the matrix's {', '.join(f'{k}={v}' for k, v in single.items())} also reach torchbench's own "
            "processes"] if single else []


def open_workspace(*, out: Path, env_dir: Path, repo_path: Path, repo, project_sha: str,
                   benchmarks: Path | None, fds: tuple[int, ...], timings: Timings | None = None,
                   torch_build: bool = False, torch: tuple[str, ...] = (),
                   pip: PipIndex | None = None, user: UserConfig | None = None) -> Workspace:
    """Derive OUT/asv.conf.json for the repository (project read at `project_sha`) and its suites, its own asv
    configuration (`user`, from Folders.config) layered under ours; `torch`: the releases to measure, an
    environment each (default: the pinned one); `pip`: the package indexes the environments install from.
    Prints what was taken from the user's configuration and what torchbench added."""
    user = None if torch_build else user
    subdir = str(user.values.get("repo_subdir", "")) if user else ""
    project = config.read_project(repo, project_sha, repo_path.name, subdir)
    bench_dir = config.benchmark_dir(repo_path, benchmarks, torch_build=torch_build, user=user)
    notes: list[str] = []
    conf = config.derive(repo=repo_path, project=project, out=out, env_dir=env_dir, benchmark_dir=bench_dir,
                         torch=torch, user=user, notes=notes)
    notes += _matrix_environment(user)
    left_out = json.loads(conf.read_text()).get(config.LEFT_OUT_KEY)
    if left_out:  # this process is the command's: asv and the workers inherit it (torchbench_core.skips)
        os.environ[LEFT_OUT_ENV] = json.dumps(left_out)
    for note in notes:
        print(f"== {note}", flush=True)
    return Workspace(out=out, env_dir=env_dir, repo_path=repo_path, repo=repo, project=project,
                     bench_dir=bench_dir, conf=conf,
                     asv=Asv(conf, timings or Timings(), keep_fds=fds, pip=pip or PipIndex()), config=user)
