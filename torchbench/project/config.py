"""The asv configuration derived for one run, and what it needs from the tracked project.

The base is torchbench/project/asv.conf.json, shipped in the package (torch pinned in the matrix, the
project built and installed with --no-deps, forkserver launch). A run points
it at the tracked repository and the output folder, and loads our asv plugin
(atomic result files, build and failure records; see asv_bridge/plugin.py).

The tracked project is described by its pyproject.toml at the last commit of
the range: its distribution name (asv uninstalls it between commits), its
build-system requirements (hatchling, flit_core, poetry-core, setuptools...)
and its runtime dependencies. Those go into each environment after `asv
setup` (see asv_driver.prepare_environments) rather than into asv's matrix:
asv 0.6.6 turns a matrix value such as ">=1.21" into "==1.21".
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import git

from .. import resources
from . import commits, conda_names, installable
from ..errors import UserError
from .user_config import HONOURED, UserConfig
from torchbench_core.storage import atomic_write_text

__all__ = ["LEFT_OUT_KEY", "PLUGIN", "PUBLISHER", "Project", "base_config", "benchmark_dir", "check_torch_versions", "derive",
           "read_project"]

PLUGIN = ".torchbench.asv_bridge.plugin"  # the leading dot: asv ignores plugin names without it
PUBLISHER = ".torchbench.publish.publisher"  # our pages, in `torchbench publish` and a plain `asv publish` alike
# PEP 517's fallback for a project without [build-system]
LEGACY_BUILD_REQUIRES = ["setuptools>=40.8.0", "wheel"]
# Never installed as a project dependency: the environment's torch is the pinned one.
PINNED = {"torch"}
# the derived configuration's {module: package} of the user's matrix packages left out (installable.py)
LEFT_OUT_KEY = "torchbench_left_out"


@dataclass(frozen=True)
class Project:
    name: str
    build_requires: list[str] = field(default_factory=list)
    dependencies: list[str] = field(default_factory=list)

    @property
    def build_backend_packages(self) -> list[str]:
        return [_requirement_name(r) for r in self.build_requires]


def _requirement_name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[(@]", requirement.strip(), maxsplit=1)[0]


def read_project(repo: git.Repo, commit: str, fallback_name: str, subdir: str = "") -> Project:
    """The project as its pyproject.toml at `commit` describes it (in SUBDIR: asv's repo_subdir)."""
    where = f"{subdir.strip('/')}/pyproject.toml" if subdir.strip("/") else "pyproject.toml"
    try:
        text = repo.git.show(f"{commit}:{where}")
    except git.GitCommandError:
        return Project(fallback_name, list(LEGACY_BUILD_REQUIRES))  # setup.py-only project
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{repo.working_dir}: pyproject.toml at {commit[:8]} is not valid TOML: {e}") from None
    project = doc.get("project", {})
    poetry = doc.get("tool", {}).get("poetry", {})
    name = project.get("name") or poetry.get("name") or fallback_name
    build_requires = doc.get("build-system", {}).get("requires", LEGACY_BUILD_REQUIRES)
    dependencies = list(project.get("dependencies", []))
    if not dependencies and isinstance(poetry.get("dependencies"), dict):
        dependencies = [n for n in poetry["dependencies"] if n != "python"]
    dependencies = [d for d in dependencies if conda_names.normalise(_requirement_name(d)) not in PINNED]
    return Project(name, list(build_requires), dependencies)


def benchmark_dir(repo: Path, explicit: Path | None, *, torch_build: bool = False,
                  user: UserConfig | None = None) -> Path:
    """The suites to run: --benchmarks, else the `benchmark_dir` of the repository's own asv.conf.json
    (relative to that file), else the tracked project's own `benchmarks/`, else ours (ours always for a torch
    build: a torch checkout's benchmarks/ is not an asv suite)."""
    if explicit is not None:
        return explicit.resolve()
    if torch_build:
        return resources.suites()
    if user is not None:
        return user.benchmark_dir()
    if (repo / "benchmarks").is_dir():
        return repo / "benchmarks"
    return resources.suites()


def strip_comments(text: str) -> str:
    """asv.conf.json carries // comments (asv accepts them); json does not."""
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))


def base_config() -> dict:
    return json.loads(strip_comments(resources.base_config_file().read_text()))


TORCH_VERSION = re.compile(r"\d+(\.\d+)+((a|b|rc|\.post|\.dev)\d+)*(\+[A-Za-z0-9.]+)?")


def check_torch_versions(versions: tuple[str, ...] | list[str]) -> None:
    """Exact releases only (pip's ==): a range would let pip pick a multi-GB build nobody asked for."""
    for v in versions:
        if not TORCH_VERSION.fullmatch(v):
            raise UserError(f"--torch {v!r}: give an exact release, such as 2.12.0")
    if len(set(versions)) != len(versions):
        raise UserError(f"--torch: a release is given twice ({', '.join(versions)})")


def _layer(conf: dict, user: UserConfig, notes: list[str], env_dir: Path) -> dict:
    """The user's configuration under ours: its honoured keys and its matrix (but torch) replace the base's.
    Returns the matrix packages taken from the user's (pip's names, those that can be installed here)."""
    values = user.values
    taken = [k for k in HONOURED if k in values]
    for key in taken:
        conf[key] = values[key]
    env_type, why = user.environment_type()
    conf["environment_type"] = env_type
    if why:
        notes.append(why)
    matrix = user.matrix()
    theirs = matrix.get("req", {})
    if env_type != "conda":  # pip installs the environments: conda's names become pip's (conda_names.json)
        theirs, renamed = conda_names.to_pip(theirs)
        notes.extend(renamed)
    asked_torch = next((theirs.pop(k) for k in list(theirs) if conda_names.normalise(k) in PINNED), None)
    ours = dict(conf["matrix"]["req"])
    if env_type != "conda" and theirs:
        checked = installable.check(theirs, ours, env_dir)
        theirs, ours = checked.theirs, checked.ours
        if checked.left_out:  # the rows that import one are skipped here, with why (torchbench_core.skips)
            conf[LEFT_OUT_KEY] = {name.split("+")[-1].replace("-", "_").lower(): name for name in checked.left_out}
        for name, why in checked.left_out.items():
            pin = ours.get(name)
            notes.append(f"matrix package {name} cannot be installed here, so it is left out"
                         + (f" (torchbench's {name} {pin} instead)" if pin is not None else
                            " (the rows that import it are skipped here, each saying why)") + f": {why}")
        for name, why in checked.ours_left_out.items():
            notes.append(f"torchbench's pin of {name} is left out, the user's matrix wins: {why}"
                         if name != "(none)" else f"before anything is built: {why}")
    req = dict(ours)
    req.update(theirs)
    matrix["req"] = theirs
    conf["matrix"] = {"req": req, **{k: v for k, v in matrix.items() if k != "req" and v}}
    if values.get("plugins"):
        conf["plugins"] = [*conf["plugins"], *(p for p in values["plugins"] if p not in conf["plugins"])]
    keys = ", ".join(taken + ["environment_type"] * ("environment_type" in values) + ["matrix"] * bool(matrix))
    notes.append(f"asv configuration {user.path}: its {keys or 'defaults'} and benchmark_dir "
                 f"{values.get('benchmark_dir', 'benchmarks')} are used as written")
    pinned = conf["matrix"]["req"]["torch"]
    asked = [str(v) for v in (asked_torch if isinstance(asked_torch, list) else [asked_torch])]
    if asked_torch is not None and asked != [""] and pinned not in asked:
        notes.append(f"its matrix asks torch {', '.join(asked)}: torchbench measures the pinned release {pinned} "
                     "instead (--torch VERSION measures others)")
    return theirs


def derive(*, repo: Path, project: Project, out: Path, env_dir: Path, benchmark_dir: Path,
           torch: tuple[str, ...] = (), user: UserConfig | None = None, notes: list[str] | None = None) -> Path:
    """Write OUT/asv.conf.json for this run and return its path. `torch`: the releases to measure, one asv
    environment each (asv's matrix); none: the base configuration's pinned release. `user`: the repository's
    own asv configuration, layered under torchbench's additions (the pinned torch or `torch`, our plugins, the
    folders under OUT); `notes` receives the lines that say what was taken from where."""
    if not benchmark_dir.is_dir():
        raise UserError(f"{benchmark_dir}: no such benchmark folder")
    check_torch_versions(torch)
    notes = notes if notes is not None else []
    conf = base_config()
    theirs: dict = {}
    if user is not None:
        theirs = _layer(conf, user, notes, env_dir)
    if torch:
        conf["matrix"]["req"]["torch"] = list(torch) if len(torch) > 1 else torch[0]
    if user is not None and "branches" not in user.values:  # asv's default would be init.defaultBranch or master
        branch = commits.default_branch(git.Repo(repo))
        conf["branches"] = [branch]
        notes.append(f"{user.path.name} names no branches: the repository's default branch, {branch}, is followed")
    conf.update(
        repo=str(repo),
        project=project.name,
        benchmark_dir=str(benchmark_dir),
        env_dir=str(env_dir),
        results_dir=str(out / "results"),
        html_dir=str(out / "html"),
    )
    conf["plugins"] = [PLUGIN, PUBLISHER, *(p for p in conf["plugins"] if p not in (PLUGIN, PUBLISHER))]
    torch_line = conf["matrix"]["req"]["torch"]
    if user is not None:
        pins = ", ".join(f"{k} {v}".strip() for k, v in base_config()["matrix"]["req"].items()
                         if k != "torch" and k not in theirs and k in conf["matrix"]["req"])
        notes.append(f"torchbench adds: torch {', '.join(torch_line) if isinstance(torch_line, list) else torch_line}"
                     f"{' (--torch)' if torch else ' (pinned)'}, its pins of {pins or 'nothing else'}, its plugins "
                     f"({PLUGIN}, {PUBLISHER}), and the environments, results and site under {env_dir} and {out}")
    path = out / "asv.conf.json"
    atomic_write_text(path, json.dumps(conf, indent=2) + "\n")
    return path
