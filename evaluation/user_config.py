"""`asv run` and `torchbench run` on the same user project: do they read the same configuration? (issue 48)

The project is a small git repository kept as asv users keep theirs: its
configuration in asv_bench/asv.conf.json (`"repo": ".."`, a benchmark_dir
that is not asv's default, a build_command of its own that writes a module the
suite imports, a matrix with a `req` and an `env` entry, torch pinned to the
release torchbench pins), a suite with a `device` parameter of "cpu" and
"cuda", a `track_` method timed by torch.utils.benchmark.Timer, and a class
whose setup raises NotImplementedError.

Both tools run from inside the repository with no location flags:

  anchor  asv run --config asv_bench/asv.conf.json --quick HEAD^!   (asv's own environment)
  ours    torchbench run --last 1 --rounds 1 --no-publish            (torchbench's, layered)

and the script prints, side by side: the benchmark lists (asv's
benchmarks.json of each: names, parameters, types), the environments (asv's
environment names: the user's matrix entries, and what torchbench adds on
top), and each row's outcome. Pass: the benchmark lists are equal, every
entry of the user's matrix is in torchbench's environment with its value,
and the rows asv measured are the rows torchbench measured (the others
skipped by torchbench: asv fails the rows that need a CUDA device, and skips
the NotImplementedError one). Exit status 0 on a pass, 1 otherwise.

    python evaluation/user_config.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import git

ROOT = Path(__file__).resolve().parents[1]
TORCH = "2.13.0"

CONFIG = {
    "version": 1,
    "project": "mylib",
    "repo": "..",
    "branches": ["main"],
    "dvcs": "git",
    "environment_type": "virtualenv",
    "pythons": ["3.11"],
    "benchmark_dir": "suites",
    "env_dir": ".asv/env",
    "results_dir": ".asv/results",
    "html_dir": ".asv/html",
    "build_command": [
        "python -c \"import pathlib; pathlib.Path(r'{build_dir}/mylib/stamp.py').write_text('STAMP = 7')\"",
        "python -m pip wheel --no-deps --no-build-isolation -w {build_cache_dir} {build_dir}",
    ],
    "install_command": ["in-dir={env_dir} python -m pip install --no-deps {wheel_file}"],
    "matrix": {"req": {"torch": TORCH, "numpy": "", "setuptools": "", "packaging": "26.4"},
               "env": {"MYLIB_MODE": "fast"}},
}

SUITE = '''
import os

import torch
import torch.utils.benchmark as benchmark


class Softmax:
    params = [[64, 256], ["cpu", "cuda"]]
    param_names = ["n", "device"]

    def setup(self, n, device):
        import packaging  # the matrix's req
        from mylib.stamp import STAMP  # the build_command's module
        import mylib
        assert os.environ["MYLIB_MODE"] == "fast" and STAMP == 7  # the matrix's env
        self.f, self.x = mylib.softmax, torch.randn(n, n, device=device)

    def track_fwd(self, n, device):
        return benchmark.Timer("f(x)", globals={"f": self.f, "x": self.x}).blocked_autorange(
            min_run_time=0.05).median * 1e6

    track_fwd.unit = "us"


class Sparse:
    def setup(self):
        raise NotImplementedError("no sparse kernel on this machine")

    def time_spmm(self):
        pass
'''

FILES = {
    "pyproject.toml": '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n'
                      '[project]\nname = "mylib"\nversion = "0.1"\ndependencies = ["torch"]\n\n'
                      '[tool.setuptools]\npackages = ["mylib"]\n',
    "mylib/__init__.py": "import torch\n\n\ndef softmax(x):\n    return torch.softmax(x, -1)\n",
    "asv_bench/asv.conf.json": "// the project's own asv configuration\n" + json.dumps(CONFIG, indent=2) + "\n",
    "asv_bench/suites/__init__.py": "",
    "asv_bench/suites/bench_softmax.py": SUITE,
    ".gitignore": ".asv/\n.torchbench/\n",
}


def make_project(path: Path) -> None:
    repo = git.Repo.init(path, initial_branch="main")
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "u").set_value("user", "email", "u@example.invalid")
    for rel, text in FILES.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    repo.index.add(list(FILES))
    repo.index.commit("mylib and its asv suite")


def run(cmd: list[str], cwd: Path, log: Path) -> tuple[int, float]:
    start = time.perf_counter()
    with open(log, "w") as f:
        proc = subprocess.run(cmd, cwd=cwd, stdout=f, stderr=subprocess.STDOUT,
                              env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                                  filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))))
    return proc.returncode, time.perf_counter() - start


def benchmark_list(results: Path) -> dict[str, tuple]:
    doc = json.loads((results / "benchmarks.json").read_text())
    return {name: (b["type"], tuple(b.get("param_names", [])), json.dumps(b.get("params", [])))
            for name, b in doc.items() if name != "version"}


def outcomes(results: Path) -> tuple[set[str], dict[str, str]]:
    """(environment names, {row: "measured" | "skipped" | "failed"}) from asv's result files under RESULTS."""
    from asv.results import iter_results

    envs, rows = set(), {}
    for res in iter_results(str(results)):
        envs.add(res.env_name)
        for name in res.get_all_result_keys():
            values = res.get_result_value(name, res.get_result_params(name))
            params = res.get_result_params(name)
            combos = list(itertools.product(*params)) if params else [()]
            for combo, v in zip(combos, values):
                key = f"{name}({', '.join(combo)})" if combo else name
                rows[key] = "failed" if v is None else "skipped" if v != v else "measured"  # asv: NaN = skip
    return envs, rows


def side_by_side(title: str, left: list[str], right: list[str]) -> None:
    print(f"\n== {title}")
    width = max([len("asv"), *map(len, left)]) + 2
    print(f"  {'asv':{width}}torchbench")
    for i in range(max(len(left), len(right))):
        a = left[i] if i < len(left) else ""
        b = right[i] if i < len(right) else ""
        print(f"  {a:{width}}{b}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="make the project here and keep it (default: a temporary folder)")
    args = parser.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="user-config-"))
    project = base / "mylib"
    if project.exists():
        shutil.rmtree(project)
    make_project(project)
    print(f"== the project: {project} (asv_bench/asv.conf.json; benchmark_dir suites; a build_command; matrix "
          f"req torch {TORCH}, packaging 26.4, env MYLIB_MODE=fast)", flush=True)

    asv_status, asv_s = run([sys.executable, "-m", "asv", "run", "--config", "asv_bench/asv.conf.json", "--quick",
                             "--show-stderr", "HEAD^!"], project, base / "asv.log")
    print(f"== asv run: exit status {asv_status}, {asv_s:.0f} s (log {base / 'asv.log'})", flush=True)
    tb_status, tb_s = run([sys.executable, "-m", "torchbench", "run", "--last", "1", "--rounds", "1",
                           "--no-publish", "--no-counts"], project, base / "torchbench.log")
    print(f"== torchbench run: exit status {tb_status}, {tb_s:.0f} s (log {base / 'torchbench.log'})", flush=True)
    for line in (base / "torchbench.log").read_text().splitlines()[:6]:
        if line.startswith("== ") and ("asv configuration" in line or "adds" in line or "matrix" in line
                                       or "tracking" in line):
            print(f"   {line}")

    asv_results, tb_results = project / "asv_bench" / ".asv" / "results", project / ".torchbench" / "results"
    ok = asv_status in (0, 2) and tb_status == 0
    asv_list, tb_list = benchmark_list(asv_results), benchmark_list(tb_results)
    side_by_side("benchmark lists (type, parameter names, parameters)",
                 [f"{n} {t[0]} {t[1]} {t[2]}" for n, t in sorted(asv_list.items())],
                 [f"{n} {t[0]} {t[1]} {t[2]}" for n, t in sorted(tb_list.items())])
    lists_equal = asv_list == tb_list
    print(f"  -> {'equal' if lists_equal else 'DIFFERENT'}")

    asv_envs, asv_rows = outcomes(asv_results)
    tb_envs, tb_rows = outcomes(tb_results)
    side_by_side("environments (asv's names)", sorted(asv_envs), sorted(tb_envs))
    wanted = ["py3.11", f"torch{TORCH}", "packaging26.4", "MYLIB_MODEfast"]
    envs_ok = len(tb_envs) == len(asv_envs) == 1 and all(
        w in next(iter(asv_envs)).split("-") and w in next(iter(tb_envs)).split("-") for w in wanted)
    added = sorted(set(next(iter(tb_envs)).split("-")) - set(next(iter(asv_envs)).split("-"))) if envs_ok else []
    print(f"  -> the user's matrix ({', '.join(wanted)}) in both: {'yes' if envs_ok else 'NO'}; torchbench adds: "
          f"{', '.join(added) or 'nothing'} (its pins: asv would re-resolve them)")

    side_by_side("rows (asv fails the rows that need a CUDA device; torchbench skips them)",
                 [f"{k}: {v}" for k, v in sorted(asv_rows.items())], [f"{k}: {v}" for k, v in sorted(tb_rows.items())])
    measured = {k for k, v in asv_rows.items() if v == "measured"}
    rows_equal = set(asv_rows) == set(tb_rows) and measured == {k for k, v in tb_rows.items() if v == "measured"}
    rows_equal = rows_equal and all(tb_rows[k] == "skipped" for k in set(tb_rows) - measured)
    print(f"  -> the same rows, the same {len(measured)} measured, the others skipped by torchbench: "
          f"{'yes' if rows_equal else 'NO'}")
    passed = ok and lists_equal and envs_ok and rows_equal
    print(f"\n== {'pass' if passed else 'FAIL'}: asv and torchbench read the same configuration"
          f"{'' if passed else ' (see above)'}; asv {asv_s:.0f} s, torchbench {tb_s:.0f} s (each building its "
          "own environment)")
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
