"""torchbench as a package people install: the wheel of this checkout, installed (not editable) into a
fresh venv, used from a folder that is not the checkout.

The wheel is built (through its sdist) from a copy of the working tree (tracked and untracked, not
ignored files), so no stale build/ or egg-info of the checkout can slip into it. The venv is a plain one (no system site
packages: this machine's python has an editable install of the checkout), with torch from the pinned
CPU wheel (constraints.txt). Every command then runs from a temporary folder, with the venv's own
bin/torchbench (or bin/python) named by path, the venv not activated, no PYTHONPATH, a temporary HOME
and the checkout off PATH; one asv environment folder is shared by all of them (--env-dir).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from e2e import ROOT, explain, make_repo

pytestmark = pytest.mark.slow

# the checkout's folders and where the wheel ships them: the design card's top-level benchmarks/ and
# html_templates/ go inside torchbench (pyproject's package-dir; torchbench/resources.py finds them there)
SHIPPED = {"torchbench": "torchbench", "torchbench_core": "torchbench_core",
           "benchmarks": "torchbench/benchmarks", "html_templates": "torchbench/html_templates"}
# package data that must exist in the checkout (so that the check of every file cannot pass on nothing)
PACKAGE_DATA = ["html_templates/*.j2", "html_templates/static/*", "benchmarks/*.py",
                "torchbench/project/asv.conf.json", "torchbench/project/tensorlib/README.md",
                "torchbench/project/tensorlib/patches/*.patch", "torchbench/schemas/*.json"]

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "wheellib"
version = "0.1"
description = "a throwaway library measured by an installed torchbench"

[tool.setuptools]
packages = ["wheellib"]
"""
FAST = "def work(n):\n    return sum(range(n))\n"
SLOW = "def work(n):\n    return sum(sum(range(n)) for _ in range(4))\n"
SUITE = '''\
from pathlib import Path

import torchbench_core
import wheellib
from torchbench_core.asv_suite import TimerSpec, TimerSuite

# which torchbench_core the benchmark processes import (the test checks it is the venv's)
Path({witness!r}).write_text(torchbench_core.__file__)


class Work(TimerSuite):
    timers = [TimerSpec("wheellib.work(200)", globals={{"wheellib": wheellib}}, label="wheellib",
                        sub_label="work(200)", description="sum of a range")]
    min_run_time = 0.05
'''


def _copy_tree(dest: Path) -> None:
    """The checkout's working tree as it is now (tracked and untracked files git does not ignore)."""
    listing = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, check=True).stdout.decode()
    for rel in filter(None, listing.split("\0")):
        src = ROOT / rel
        if src.is_file():  # a tracked file deleted in the working tree is not part of it
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


@dataclass
class Wheel:
    path: Path
    src: Path  # the copy of the working tree it was built from


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Wheel:
    """Built as a release is: the sdist, then the wheel from the sdist (no build isolation: setuptools is
    here, and the registry need not be)."""
    src = tmp_path_factory.mktemp("wheel-src")
    _copy_tree(src)
    dist = tmp_path_factory.mktemp("dist")
    proc = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "-o", str(dist), str(src)],
                          check=False, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, explain(proc)
    (whl,) = dist.glob("torchbench_tracker-*.whl")  # the distribution torchbench-tracker
    return Wheel(whl, src)


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A plain venv with the wheel and its dependencies (~1 minute: torch from the local CPU wheel)."""
    path = tmp_path_factory.mktemp("venv") / "v"
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=300)
    proc = subprocess.run([str(path / "bin" / "python"), "-m", "pip", "install", "-q",
                           "--disable-pip-version-check", "-c", str(ROOT / "constraints.txt"), str(wheel.path)],
                          check=False, capture_output=True, text=True, cwd=path, env=outside_env(), timeout=900)
    assert proc.returncode == 0, explain(proc)
    return path


def outside_env(home: Path | None = None) -> dict[str, str]:
    """A user's shell far from the checkout: no PYTHONPATH, no active venv, no checkout on PATH, none of
    asv's or torchbench's variables; HOME elsewhere if given (pip's install keeps this one's wheel cache)."""
    drop = {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONSAFEPATH", "VIRTUAL_ENV", "CONDA_PREFIX"}
    env = {k: v for k, v in os.environ.items()
           if k not in drop and not k.startswith(("ASV_", "TORCHBENCH_", "PYTEST_"))}
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep)
            if p and not Path(p).resolve().is_relative_to(ROOT)]
    env["PATH"] = os.pathsep.join(path)
    if home is not None:
        env["HOME"] = str(home)
    return env


class Outside:
    """Commands run from a temporary folder with the venv's programs, named by path."""

    def __init__(self, venv: Path, cwd: Path):
        self.venv = venv
        self.cwd = cwd
        self.home = cwd / "home"
        self.home.mkdir(parents=True, exist_ok=True)

    def __call__(self, program: str, *args, timeout: float = 900) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.venv / "bin" / program), *map(str, args)], check=False,
                              capture_output=True, text=True, cwd=self.cwd, env=outside_env(self.home),
                              timeout=timeout)


@pytest.fixture(scope="module")
def outside(venv, tmp_path_factory) -> Outside:
    return Outside(venv, tmp_path_factory.mktemp("elsewhere"))


def user_config(outside: Outside, repo: Path, results: Path) -> Path:
    """A user's own asv.conf.json, in a folder of theirs, with our publisher among its plugins."""
    user = outside.cwd / "user-site"
    user.mkdir(exist_ok=True)
    conf = user / "asv.conf.json"
    conf.write_text(json.dumps({
        "version": 1, "project": "wheellib", "project_url": "https://example.com/", "repo": str(repo),
        "branches": ["main"], "dvcs": "git", "environment_type": "virtualenv", "pythons": ["3.11"],
        "benchmark_dir": str(repo / "benchmarks"), "env_dir": str(outside.cwd / "envs"),
        "results_dir": str(results), "html_dir": str(user / "html"),
        "plugins": [".torchbench.publish.publisher"]}, indent=4))
    return conf


@dataclass
class Measured:
    runs: list[subprocess.CompletedProcess]  # into out, then into out-again
    repo: Path
    out: Path
    env_dir: Path
    shas: list[str]
    witness: Path  # the suite writes there the torchbench_core it imported
    conf: Path  # the user's own asv.conf.json

    def ok(self) -> Measured:
        for proc in self.runs:
            assert proc.returncode == 0, explain(proc)
            assert "everything was measured (exit status 0)" in proc.stdout, explain(proc)
        return self


@pytest.fixture(scope="module")
def measured(outside) -> Measured:
    """`torchbench run` of a throwaway library's two commits (fast, then 4x the work) with its own suite,
    on a machine the user has named to asv (`asv machine`, with their own asv.conf.json); twice, into two
    output folders, so that `alert` has two processes a side (a result file is one process to it)."""
    repo = outside.cwd / "wheellib"
    witness = outside.cwd / "harness-imported"
    files = {"pyproject.toml": PYPROJECT, "wheellib/__init__.py": FAST, "benchmarks/__init__.py": "",
             "benchmarks/bench_work.py": SUITE.format(witness=str(witness))}
    shas = make_repo(repo, [("fast", files), ("four times the work", {"wheellib/__init__.py": SLOW})])
    out, env_dir = outside.cwd / "out", outside.cwd / "envs"
    conf = user_config(outside, repo, out / "results")
    machine = outside("python", "-m", "asv", "machine", "--yes", "--config", conf)
    assert machine.returncode == 0 and (outside.home / ".asv-machine.json").exists(), explain(machine)
    runs = [outside("torchbench", "run", "--repo", repo, "--last", 2, "-b", "Work", "--rounds", 1, "--out", o,
                    "--env-dir", env_dir, "--no-publish") for o in (out, out.with_name("out-again"))]
    return Measured(runs, repo, out, env_dir, shas, witness, conf)


def _site_packages(venv: Path) -> Path:
    (found,) = (venv / "lib").glob("python3.*/site-packages")
    return found


def test_the_wheel_holds_the_package_data_and_nothing_else(wheel):
    names = set(zipfile.ZipFile(wheel.path).namelist())
    for pattern in PACKAGE_DATA:
        assert [p for p in wheel.src.glob(pattern) if p.is_file()], f"{pattern} matches nothing in the checkout"
    # every file of the four folders ships where resources.py looks, data included (a new template, schema
    # or subpackage needs pyproject's package-data or packages)
    shipped = {f"{into}/{p.relative_to(wheel.src / top).as_posix()}" for top, into in SHIPPED.items()
               for p in (wheel.src / top).rglob("*") if p.is_file()}
    assert shipped <= names, sorted(shipped - names)
    tops = {n.split("/")[0] for n in names}
    dist_info = "-".join(wheel.path.name.split("-")[:2]) + ".dist-info"
    assert tops == {"torchbench", "torchbench_core", dist_info}, tops  # no tests, scripts or evaluation
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def test_the_venv_imports_the_installed_wheel_not_the_checkout(outside):
    proc = outside("python", "-c", "import torchbench, torchbench_core; from torchbench import resources\n"
                   "print(torchbench.__file__); print(torchbench_core.__file__)\n"
                   "for f in (resources.templates, resources.static, resources.suites, resources.base_config_file,"
                   " resources.example_patches, resources.harness): print(f())\n"
                   "print(resources.schema('regressions.schema.json'))")
    assert proc.returncode == 0, explain(proc)
    site = _site_packages(outside.venv)
    paths = [Path(line) for line in proc.stdout.splitlines()]
    assert len(paths) == 9
    for p in paths:
        assert p.exists() and p.is_relative_to(site), (p, site)
        assert not p.resolve().is_relative_to(ROOT)


def test_run_and_publish_from_another_folder(measured, outside):
    m = measured.ok()
    out, shas = m.out, m.shas
    files = [p for p in (out / "results").glob("*/*.json") if p.name != "machine.json"]
    assert {p.name[:8] for p in files} == {s[:8] for s in shas}, files
    # the benchmark processes imported the venv's torchbench_core (linked into the asv environment)
    site = _site_packages(outside.venv)
    assert Path(m.witness.read_text()).resolve().is_relative_to(site)
    (link,) = m.env_dir.glob("*/torchbench-harness/torchbench_core")
    assert link.resolve() == site / "torchbench_core"
    assert not list(m.env_dir.glob("*/lib/python3.*/site-packages/torchbench_core"))  # never a link there

    published = outside("torchbench", "publish", "--out", out)
    assert published.returncode == 0, explain(published)
    index = out / "html" / "torchbench" / "index.html"
    assert index.exists() and "wheellib" in index.read_text()
    assert (out / "html" / "index.html").exists()


def test_every_page_kind_renders_from_the_installed_templates(measured, outside):
    """Flame graphs recorded at both commits, then the site: the landing page, a Compare and a series page
    per label, the Steps page and its JSON, asv's feed, each commit's flame graph and the differential page
    between them, all from the templates and static files inside site-packages."""
    m = measured.ok()
    out, shas = m.out, m.shas
    profiled = outside("torchbench", "profile", "--repo", m.repo, "--last", 2, "-b", "Work", "--seconds", "0.3",
                       "--out", out, "--env-dir", m.env_dir)
    assert profiled.returncode == 0, explain(profiled)
    published = outside("torchbench", "publish", "--out", out)
    assert published.returncode == 0, explain(published)
    site = out / "html" / "torchbench"
    for page in ("index.html", "regressions.html", "regressions.json", "torchbench.css", "series.js", "compare.js"):
        assert (site / page).is_file(), page
    (compare,) = (site / "compare").glob("*.html")
    (series,) = (site / "series").glob("*.html")
    assert "wheellib" in compare.read_text() and "<svg" in series.read_text()
    assert (out / "html" / "regressions.xml").is_file()
    for sha in shas:
        assert list((site / "profiles" / sha).rglob("*.svg")), sha
    (diff,) = (site / "profiles" / "diff").rglob("*.html")
    assert f"{shas[0][:8]}-{shas[1][:8]}" in diff.as_posix() and "flamegraph" in diff.read_text().lower()


def test_alert_decides_from_the_run_result_files(measured, outside):
    m = measured.ok()
    out, shas = m.out, m.shas
    base, head = ([p for o in (out, out.with_name("out-again")) for p in (o / "results").glob(f"*/{sha[:8]}-*")]
                  for sha in shas)
    assert len(base) == len(head) == 2
    report = outside.cwd / "alert.json"
    alert = outside("torchbench", "alert", "--base-results", *base, "--head-results", *head, "--json", report)
    assert alert.returncode in (0, 1), explain(alert)
    assert "<!-- torchbench-alert -->" in alert.stdout
    doc = json.loads(report.read_text())
    assert doc["verdict"] and doc["exit_status"] == alert.returncode
    assert (doc["base"]["sha"], doc["head"]["sha"]) == (shas[0], shas[1])
    assert doc["verdict"] in alert.stdout


def test_the_shipped_suites_measure_the_venvs_own_torch_with_existing(measured, outside):
    """torchbench's own suites (package data) run from site-packages, in the venv's python given as is."""
    m = measured.ok()
    out = outside.cwd / "out-existing"
    proc = outside("torchbench", "run", "--existing", outside.venv / "bin" / "python", "--repo", m.repo,
                   "--commit", m.shas[1], "-b", "TorchFunctionOverhead", "--rounds", 1, "--out", out,
                   "--no-publish")
    assert proc.returncode == 0 and "4 measured" in proc.stdout, explain(proc)
    assert f"suites in {_site_packages(outside.venv) / 'torchbench' / 'benchmarks'}" in proc.stdout
    files = [p for p in (out / "results").glob("*/*.json") if p.name != "machine.json"]
    assert [p.name[:8] for p in files] == [m.shas[1][:8]] and "existing-" in files[0].name


def test_the_other_shipped_suites_run_from_site_packages(measured, outside):
    """The default suites that need neither valgrind nor torch.compile, each run once (--quick) from the
    installed wheel; the instruction-count and compiled-operator suites are measured by their own tests."""
    m = measured.ok()
    proc = outside("torchbench", "run", "--existing", outside.venv / "bin" / "python", "--repo", m.repo,
                   "--commit", m.shas[1], "-b", "BatchedDot|BinaryOps|UnaryOps|TorchFunctionOverhead", "--quick",
                   "--out", outside.cwd / "out-quick", "--no-publish")
    assert proc.returncode == 0, explain(proc)
    for name in ("batched_dot.BatchedDot.track_batched_dot", "fuzzed_ops.BinaryOps.track_binary",
                 "fuzzed_ops.UnaryOps.track_unary", "memory.BatchedDotMemory.peakmem_batched_dot",
                 "torch_function.TorchFunctionOverhead.track_time"):
        assert any(name in line and line.rstrip().endswith("ok") for line in proc.stdout.splitlines()), name


def test_a_plain_asv_publish_with_our_publisher_in_the_users_config(measured, outside):
    """A user's own asv.conf.json listing our publisher: `asv publish` makes our pages too."""
    conf = measured.ok().conf
    user = conf.parent
    published = outside("python", "-m", "asv", "publish", "--config", conf)
    assert published.returncode == 0, explain(published)
    index = user / "html" / "torchbench" / "index.html"
    assert index.exists(), explain(published)
    assert "wheellib" in index.read_text()
    assert "nav-li-torchbench" in (user / "html" / "index.html").read_text()


def test_a_run_on_a_machine_asv_has_not_met_names_it_from_any_folder(measured, outside):
    """No ~/.asv-machine.json yet (a new user's HOME), and no asv.conf.json in the current folder."""
    m = measured.ok()  # the environment is built
    fresh = Outside(outside.venv, outside.cwd / "new-user")
    first = fresh("torchbench", "run", "--repo", m.repo, "--last", 1, "-b", "Work", "--rounds", 1,
                  "--out", fresh.cwd / "out", "--env-dir", m.env_dir, "--no-publish")
    assert first.returncode == 0, explain(first)
    assert (fresh.home / ".asv-machine.json").exists()
