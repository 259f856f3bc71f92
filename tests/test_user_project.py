"""A user's own asv project, as its authors keep it, measured from inside its repository with no location flags.

The repository keeps its configuration in asv_bench/asv.conf.json (pandas' and
xarray's place) with `"repo": ".."`, a benchmark_dir that is not asv's default,
a build_command of its own (it writes a module the suite imports: a build that
ignored it fails every row), a matrix entry (an environment variable the suite
requires; `env_nobuild`, so the session's one asv environment serves, built
once a worker for every end-to-end test) and `environment_type: conda` on a
machine without conda. Its suite has a `device`
parameter of "cpu" and "cuda" (no CUDA device here: skipped), a `track_`
method that times with torch.utils.benchmark.Timer, and a class whose setup
raises NotImplementedError (asv's skip). `torchbench run`, `publish` and
`alert` run in the repository, HOME fresh (no asv machine file): no --repo,
--config or --benchmarks. Only the CI budget adds flags: the session's shared
environment folder (--env-dir), one publish (`run --no-publish`, then `publish`) and an alert bounded to two
rounds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import git
import pytest

from e2e import ROOT, explain, make_repo

pytestmark = pytest.mark.slow

CONFIG = {
    "version": 1,
    "project": "mylib",
    "project_url": "https://example.invalid/mylib",
    "repo": "..",
    "branches": ["main"],
    "dvcs": "git",
    "environment_type": "conda",
    "show_commit_url": "https://example.invalid/mylib/commit/",
    "benchmark_dir": "suites",
    "build_command": [
        "python -c \"import pathlib; pathlib.Path(r'{build_dir}/mylib/stamp.py').write_text('STAMP = 7')\"",
        "python -m pip wheel --no-deps --no-build-isolation -w {build_cache_dir} {build_dir}",
    ],
    "matrix": {"env_nobuild": {"MYLIB_MODE": "fast"}},
    "default_benchmark_timeout": 120,
}

SUITE = '''
import torch
import torch.utils.benchmark as benchmark


class Softmax:
    params = [[64], ["cpu", "cuda"]]
    param_names = ["n", "device"]

    def setup(self, n, device):
        import os
        assert os.environ["MYLIB_MODE"] == "fast"  # the matrix's: absent unless the matrix was used
        from mylib.stamp import STAMP  # written by the project's build_command: absent unless it ran
        import mylib
        assert STAMP == 7
        self.f, self.x = mylib.softmax, torch.randn(n, n, device=device)

    def track_fwd(self, n, device):
        timer = benchmark.Timer("f(x)", globals={"f": self.f, "x": self.x})
        return timer.blocked_autorange(min_run_time=0.05).median * 1e6

    track_fwd.unit = "us"


class Sparse:
    def setup(self):
        raise NotImplementedError("no sparse kernel on this machine")

    def time_spmm(self):
        pass
'''

PYPROJECT = '''[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "mylib"
version = "0.1"
dependencies = ["torch"]

[tool.setuptools]
packages = ["mylib"]
'''

FILES = {
    "pyproject.toml": PYPROJECT,
    "mylib/__init__.py": "import torch\n\n\ndef softmax(x):\n    return torch.softmax(x, -1)\n",
    "asv_bench/asv.conf.json": "// the project's own asv configuration (json5, as asv reads it)\n"
                               + json.dumps(CONFIG, indent=2) + "\n",
    "asv_bench/suites/__init__.py": "",
    "asv_bench/suites/bench_softmax.py": SUITE,
    ".gitignore": ".torchbench/\n",
}

CPU_ROW = "bench_softmax.Softmax.track_fwd(64, 'cpu')"
CUDA_ROW = "bench_softmax.Softmax.track_fwd(64, 'cuda')"
SKIP_ROW = "bench_softmax.Sparse.time_spmm"


def tb(repo: Path, home: Path, *args, timeout=600) -> subprocess.CompletedProcess:
    env = dict(os.environ, HOME=str(home), PIP_CACHE_DIR=str(Path.home() / ".cache" / "pip"),
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-m", "torchbench", *map(str, args)], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_a_users_asv_project_runs_publishes_and_gets_a_verdict_from_inside_its_repository(tmp_path, env_dir):
    repo = tmp_path / "mylib"
    make_repo(repo, [("mylib: softmax, its asv suite", FILES),
                     ("docs only: the library's code is identical", {"README.md": "mylib\n"})])
    home = tmp_path / "home"  # no ~/.asv-machine.json: asv would ask its questions
    home.mkdir()

    run = tb(repo, home, "run", "--env-dir", env_dir, "--no-publish")  # `publish` below makes the site
    assert run.returncode == 0, explain(run)
    log = run.stdout + run.stderr
    assert f"tracking {repo.resolve()} (the git repository you are in" in log
    assert "environment_type 'conda'" in log and "virtualenvs" in log  # conda is absent here: one line says so
    assert "asv_bench/asv.conf.json" in log and "torchbench adds: torch" in log
    assert "I will now ask you some questions" not in log and "machine [" not in log
    assert " object at 0x" not in log  # asv setup's return value, which asv's main prints (issue 62's noise)
    assert (home / ".asv-machine.json").exists()
    conf = json.loads((repo / ".torchbench" / "asv.conf.json").read_text())
    assert conf["benchmark_dir"] == str(repo / "asv_bench" / "suites")
    assert conf["build_command"] == CONFIG["build_command"] and conf["branches"] == ["main"]
    assert conf["matrix"]["env_nobuild"] == {"MYLIB_MODE": "fast"} and conf["environment_type"] == "virtualenv"
    assert conf["show_commit_url"] == CONFIG["show_commit_url"] and conf["default_benchmark_timeout"] == 120
    # the row measured (so the build_command's module and the matrix's package were there), the others skipped
    report = run.stdout.split("\n== report")[-1]
    # both commits; the Timer-in-track_ row counted for the history too (its counts beside its times)
    assert report.count("1 measured, 1 with instruction counts, 2 skipped") == 2, report
    assert f"skipped {CUDA_ROW}: skipped here: no CUDA device" in report and f"skipped {SKIP_ROW}" in report
    results = list((repo / ".torchbench" / "results").rglob("*-virtualenv-py3.11-*MYLIB_MODEfast.json"))
    assert len(results) == 2, results  # both commits, filed under the environment the matrix names

    publish = tb(repo, home, "publish")
    assert publish.returncode == 0, explain(publish)
    assert (repo / ".torchbench" / "html" / "index.html").exists()

    report = tmp_path / "alert.json"  # the alert's JSON report
    alert = tb(repo, home, "alert", "HEAD~1..HEAD", "--env-dir", env_dir, "--min-rounds", 2, "--max-rounds", 2,
               "--no-counts", "--no-profile", "--json", report)
    assert alert.returncode == 0, explain(alert)
    rows = {r["name"]: r for r in json.loads(report.read_text())["rows"]}
    assert set(rows) == {CPU_ROW, CUDA_ROW, SKIP_ROW}, sorted(rows)  # the names as asv prints them
    assert rows[CPU_ROW]["status"] not in ("failed", "skipped"), rows[CPU_ROW]
    assert rows[CUDA_ROW]["status"] == "skipped" and "no CUDA device" in rows[CUDA_ROW]["error"], rows[CUDA_ROW]
    assert rows[SKIP_ROW]["status"] == "skipped", rows[SKIP_ROW]


NEWCOMER_CONF = {"version": 1, "project": "mylib", "repo": "..", "environment_type": "conda",
                 "matrix": {"pytorch": "", "pytorch-cuda": "12.1"}}  # conda's names, no "branches"
NEWCOMER_SUITE = '''
import torch

import mylib


class Softmax:
    params = [[64], ["cpu", "cuda"]]
    param_names = ["n", "device"]

    def setup(self, n, device):
        self.x = torch.randn(n, n, device=device)

    def time_softmax(self, n, device):
        mylib.softmax(self.x)


class Sparse:
    def time_spmm(self):
        raise NotImplementedError("no sparse kernel here")  # in the method: asv_runner counts it failed


class Crash:
    def time_segfault(self):
        import ctypes
        ctypes.string_at(0)
'''


def test_a_newcomers_first_hour_from_the_folder_that_holds_the_conf(tmp_path, env_dir):
    """Issue 62 items 1-4, 7 and 3 (the newcomer's list): a conda conf in benchmarks/ with conda's names and no
    branches, a default branch named trunk, commands run from benchmarks/ with no location flags. The output
    follows the repository; conda's names become pip's (the session's environment serves); -b that matches
    nothing says so; --quick exits 2 on a segfault; a -b run's report counts what it selected, an earlier run's
    results said so; `publish | head -3` ends quietly with exit 0 and a whole site."""
    repo = tmp_path / "mylib"
    files = {**{k: v for k, v in FILES.items() if not k.startswith("asv_bench/")},
             "benchmarks/asv.conf.json": json.dumps(NEWCOMER_CONF, indent=2),
             "benchmarks/benchmarks/__init__.py": "", "benchmarks/benchmarks/bench.py": NEWCOMER_SUITE}
    make_repo(repo, [("mylib and its suite", files), ("docs", {"README.md": "mylib\n"})])
    git.Repo(repo).git.branch("-M", "trunk")
    home = tmp_path / "home"
    home.mkdir()
    here = repo / "benchmarks"

    first = tb(here, home, "run", "--last", 1, "-b", "Softmax", "--rounds", 1, "--no-counts", "--no-publish",
               "--env-dir", env_dir)
    assert first.returncode == 0, explain(first)
    assert "pytorch -> torch" in first.stdout and "left out: pytorch-cuda" in first.stdout
    assert "the repository's default branch, trunk, is followed" in first.stdout
    # the cuda row's traceback told in one line (issue 62's noise: ~20 lines a row and commit)
    assert "Torch not compiled with CUDA enabled" not in first.stdout, first.stdout
    assert "skipped here: no CUDA device (its traceback is in the outcome record)" in first.stdout
    assert (repo / ".torchbench" / "results").is_dir() and not (here / ".torchbench").exists()
    assert json.loads((repo / ".torchbench" / "asv.conf.json").read_text())["branches"] == ["trunk"]

    nothing = tb(here, home, "run", "--last", 1, "-b", "NoSuchBench", "--no-publish", "--env-dir", env_dir)
    assert nothing.returncode == 2 and "-b NoSuchBench matches no benchmark of the suite (3 benchmarks" \
        in nothing.stdout, explain(nothing)

    quick = tb(here, home, "run", "--last", 1, "--quick", "-b", "Crash", "--no-publish", "--env-dir", env_dir)
    assert quick.returncode == 2 and "a benchmark failed in the quick run" in quick.stdout, explain(quick)

    second = tb(here, home, "run", "--last", 1, "-b", "Softmax|Sparse", "--rounds", 1, "--no-counts",
                "--no-publish", "--env-dir", env_dir)
    report = second.stdout.split("\n== report")[-1]
    assert second.returncode == 2, explain(second)  # the method's NotImplementedError fails, as in asv
    assert "docs: 1 measured (1 by an earlier run), 1 FAILED, 1 skipped" in report, report
    assert "FAILED" in report and "bench.Sparse.time_spmm: exit status 1: NotImplementedError" in report
    assert "Crash" not in report  # not selected by this run's -b

    env = dict(os.environ, HOME=str(home), PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT),
                                                                                 os.environ.get("PYTHONPATH")])))
    piped = subprocess.run(["bash", "-c", f"set -o pipefail; {sys.executable} -m torchbench publish | head -3"],
                           cwd=here, env=env, capture_output=True, text=True, timeout=600)
    assert piped.returncode == 0 and "Traceback" not in piped.stderr, explain(piped)
    index = (repo / ".torchbench" / "html" / "index.html").read_text()
    assert "torchbench/" in index and "cdn." not in index  # localized, with torchbench's link
