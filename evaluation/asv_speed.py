"""asv integration figures (issue 4), printed; nothing is asserted.

1. start-up cost per asv benchmark process: forkserver (ours) beside spawn (asv's default)
2. torch.add on 4 floats in one asv run: our track_ median beside asv's own time_
   median beside torch.utils.benchmark's (all three as asv benchmarks)
(The main command's time against plain asv: evaluation/run_speed.py.)

Runs 1 and 2 use asv's `existing` environment (this interpreter) in a
temporary folder, so nothing touches the project's own results.

    python evaluation/asv_speed.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROCESSES = 8

STARTUP_SUITE = f"""
import torch

class Startup:
    params = list(range({PROCESSES}))
    def track_nothing(self, i):
        return i
"""

ADD_SUITE = """
import sys
import torch
import torch.utils.benchmark as torch_benchmark
sys.path.insert(0, {root!r})
import torchbench_core

x = torch.ones(4)  # module level: asv_runner 0.3 would re-run a setup() per call


def time_add_asv():
    torch.add(x, x)


def track_add_torchbench_core():
    m = torchbench_core.Timer("torch.add(x, x)", globals={{"x": x}}).blocked_autorange(min_run_time=0.2)
    return {{"samples": m.times, "number": m.number_per_run}}
track_add_torchbench_core.unit = "seconds"


def track_add_torch_utils_benchmark():
    m = torch_benchmark.Timer("torch.add(x, x)", globals={{"x": x}}).blocked_autorange(min_run_time=0.2)
    return {{"samples": m.times, "number": m.number_per_run}}
track_add_torch_utils_benchmark.unit = "seconds"
"""


def asv_project(tmp: Path, suite: str) -> Path:
    (tmp / "benchmarks").mkdir()
    (tmp / "benchmarks" / "__init__.py").write_text("")
    (tmp / "benchmarks" / "suite.py").write_text(textwrap.dedent(suite))
    conf = {"version": 1, "project": "scratch", "repo": str(ROOT), "branches": ["HEAD"], "environment_type": "virtualenv",
            "benchmark_dir": "benchmarks", "results_dir": "results", "html_dir": "html", "env_dir": "env"}
    (tmp / "asv.conf.json").write_text(json.dumps(conf))
    return tmp / "asv.conf.json"


def asv_run(conf: Path, *extra: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "asv", "--config", str(conf), "run", "-E", f"existing:{sys.executable}",
                    "--set-commit-hash", "HEAD", "--record-samples", *extra],
                   check=True, capture_output=True, cwd=conf.parent)
    return time.perf_counter() - start


def startup(repeats: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        conf = asv_project(Path(tmp), STARTUP_SUITE)
        walls = {"spawn": [], "forkserver": []}
        for _ in range(repeats):
            for method in walls:
                walls[method].append(asv_run(conf, "--launch-method", method))
    per = {m: statistics.median(w) / PROCESSES for m, w in walls.items()}
    print(f"start-up per asv benchmark process ({PROCESSES} processes importing torch, median of {repeats}):")
    print(f"  forkserver (ours) {per['forkserver']:6.2f} s   spawn (asv default) {per['spawn']:6.2f} s   "
          f"ratio {per['forkserver'] / per['spawn']:.2f}")
    print("  (each includes asv's own per-process bookkeeping; forkserver imports torch once per commit and env)\n")


def add_medians(repeats: int) -> None:
    medians: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        conf = asv_project(Path(tmp), ADD_SUITE.format(root=str(ROOT)))
        for _ in range(repeats):
            asv_run(conf, "--launch-method", "spawn")
            result = next(p for p in (Path(tmp) / "results").glob("*/*.json") if p.name != "machine.json")
            doc = json.loads(result.read_text())
            for name, row in doc["results"].items():
                medians.setdefault(name.split(".")[-1], []).append(row[0][0])
    ours = statistics.median(medians["track_add_torchbench_core"])
    print(f"torch.add on 4 floats in one asv run (median of {repeats} runs of each benchmark's median):")
    for name, values in sorted(medians.items()):
        value = statistics.median(values)
        print(f"  {name:34} {value * 1e6:8.3f} us   ours/this {ours / value:5.2f}")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if not (Path.home() / ".asv-machine.json").exists():
        subprocess.run([sys.executable, "-m", "asv", "machine", "--yes"], check=True, capture_output=True)
    startup(args.repeats)
    add_medians(args.repeats)


if __name__ == "__main__":
    main()
