"""How a plain asv `time_` row is timed a process (issue 27, item 2): our defaults beside asv's, and the twin.

The alert gives each row a run time a process (50 ms for most rows of the
42-row plain suite of plain_suite_counts.py). Within it, a `time_` method is
timed by asv_runner's own timing, given that time as `repeat`'s max time
(torchbench_core/asv_worker.py: _allot). asv's own `sample_time` (10 ms) and
warm-up (0.1 s) make that 2-5 samples a process after a warm-up twice as long
as the samples; our defaults (where a suite leaves them to asv) make a sample
a 25th of the run time and the warm-up five samples.

Fresh processes of the worker, the three kinds interleaved (the order turned
every repeat, so the machine's drift falls on all three):
- "asv's defaults": the worker with asv's own sample time and warm-up;
- "ours": the worker as shipped;
- "twin": the same 42 operations as TimerSuite rows (blocked_autorange for the
  same run time), the reference the issue's goal names.

Printed for each: a process's seconds (median), samples a row, the spread of
a row's per-process values between processes (robust: 1.4826 x the median
absolute deviation of the logs, median row; a fresh process here lands now and
then in a slow group, +10-100%, which a standard deviation of 20 would mostly
measure), the same spread once each process's own level (its median over rows)
is taken out, which is what the timing inside a process adds, the processes
in the slow group (level > +10%), and the minimum detectable effect of the
alert's test splitting the processes into two halves at a lone row's bar
among 42 (alpha 0.01 / 42), median row. Also how far our per-row medians sit
from asv's (the shorter warm-up must not shift what is measured).

    python evaluation/plain_timing.py [--processes 20] [--run-time 0.05] [--json OUT]
    python evaluation/plain_timing.py --replay OUT   # print a saved run again
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "evaluation"))

import plain_suite_counts as plain  # noqa: E402
from torchbench import stats  # noqa: E402
from torchbench.asv_bridge.worker import MEASURED_TYPES, combinations, list_benchmarks  # noqa: E402
from torchbench_core.storage import atomic_write_text  # noqa: E402

WORKER = "import sys; import torchbench_core.asv_worker as w; {patch}sys.exit(w.main())"
KINDS = {  # asv's own 10 ms samples and 0.1 s warm-up, given the same run time
    "asv's defaults": "w.SAMPLES_A_RUN, w.MIN_SAMPLE_TIME, w.WARMUP_SAMPLES = 1, w.ASV_SAMPLE_TIME, 0.1 / w.ASV_SAMPLE_TIME; ",
    "ours": "",
    "twin": "",
}


def make_suites(tmp: Path) -> dict[str, Path]:
    (tmp / "plainlib").mkdir()
    (tmp / "plainlib/__init__.py").write_text(plain.LIBRARY.format(extra=""))
    suites = {}
    for name, text in (("plain", plain.SUITE), ("twin", plain.TWIN_SUITE)):
        folder = tmp / name / "benchmarks"
        folder.mkdir(parents=True)
        (folder / "__init__.py").write_text("")
        (folder / f"bench_{name}.py").write_text(text)
        suites[name] = folder
    return suites


def jobs_of(suite: Path, env: dict) -> list[list]:
    """The suite's timed parameter combinations as the worker's jobs, listed as the alert lists them."""
    return [[b["name"], index] for b in list_benchmarks(Path(sys.executable), suite, env)
            if b["type"] in MEASURED_TYPES for index, _ in combinations(b)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=20, help="fresh processes of each kind (default 20)")
    parser.add_argument("--run-time", type=float, default=0.05, help="each row's seconds a process (0.05)")
    parser.add_argument("--json", type=Path, help="also write every process's values here")
    parser.add_argument("--replay", type=Path, help="print a run saved with --json again, measuring nothing")
    args = parser.parse_args()
    if args.processes < 2:
        parser.error("--processes: at least 2 (the MDE splits each kind's processes into two halves)")
    if args.replay:
        saved = json.loads(args.replay.read_text())
        report(saved["values"], saved["seconds"], saved["settings"]["processes"], saved["settings"]["run_time"])
        return
    with tempfile.TemporaryDirectory(prefix="plain-timing-") as folder:
        values, seconds = measure(Path(folder), args.processes, args.run_time)
    if args.json:
        atomic_write_text(args.json, json.dumps({"settings": vars(args) | {"json": str(args.json)},
                                                 "seconds": seconds, "values": values}, indent=1))
    report(values, seconds, args.processes, args.run_time)


def measure(tmp: Path, processes: int, run_time: float) -> tuple[dict, dict]:
    """Per kind: each row's [value, samples] of every process, and each process's seconds."""
    suites = make_suites(tmp)
    env = dict(os.environ, PYTHONPATH=f"{tmp}{os.pathsep}{ROOT}")
    jobs = {name: jobs_of(suite, env) for name, suite in suites.items()}
    values: dict[str, dict[str, list]] = {kind: {} for kind in KINDS}
    seconds: dict[str, list[float]] = {kind: [] for kind in KINDS}
    for rep in range(processes):
        for kind in (list(KINDS) if rep % 2 == 0 else list(KINDS)[::-1]):
            suite = "twin" if kind == "twin" else "plain"
            job_file, run_times, out = tmp / "jobs.json", tmp / "run_times.json", tmp / f"{kind}-{rep}.jsonl"
            job_file.write_text(json.dumps(jobs[suite]))
            run_times.write_text(json.dumps({f"{n}|{i}": run_time for n, i in jobs[suite]}))
            cache = tmp / f"cache-{kind}"
            cache.mkdir(exist_ok=True)
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", WORKER.format(patch=KINDS[kind]), "run", str(suites[suite]),
                            "--jobs", str(job_file), "--out", str(out), "--cache-dir", str(cache)],
                           env=dict(env, TORCHBENCH_RUN_TIMES=str(run_times)), check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            seconds[kind].append(time.perf_counter() - started)
            for record in map(json.loads, out.read_text().splitlines()):
                if "job" in record and "error" in record:
                    sys.exit(f"{kind}: {record['job']} failed: {record['error']}")
                if "job" in record and "samples" in record:
                    values[kind].setdefault(f"{record['job'][0]}|{record['job'][1]}", []).append(
                        [stats.process_summary(record["samples"]), len(record["samples"])])
        print(f"  {rep + 1}/{processes} processes of each kind", file=sys.stderr, flush=True)
    return values, seconds


def report(values: dict, seconds: dict, processes: int, run_time: float) -> None:
    print(f"== {processes} fresh processes of each kind, {run_time * 1000:g} ms a row")
    print(f"  {'kind':16} {'rows':>4} {'s a process':>11} {'samples a row':>13} {'spread':>7} "
          f"{'inside a process':>16} {'slow processes':>14} {'MDE, halves, lone row of 42':>28}")
    for kind, rows in values.items():
        logs = np.log([[v for v, _ in row] for row in rows.values()])  # rows x processes
        deviation = logs - np.median(logs, axis=1, keepdims=True)
        level = np.median(deviation, axis=0)  # each process's own level, over the rows
        spread = np.median(np.median(np.abs(deviation), axis=1)) * 1.4826
        inside = np.median(np.median(np.abs(deviation - level), axis=1)) * 1.4826
        mde = [stats.compare([v for v, _ in row[0::2]], [v for v, _ in row[1::2]], alpha=0.01 / len(rows)).mde
               for row in rows.values()]
        samples = np.median([n for row in rows.values() for _, n in row])
        print(f"  {kind:16} {len(rows):4} {np.median(seconds[kind]):11.2f} {samples:13.0f} {spread:7.4f} "
              f"{inside:16.4f} {int(np.sum(level > np.log(1.1))):>8} of {logs.shape[1]:<3} {np.median(mde):27.1%}")
    shift = sorted(np.median([v for v, _ in values["ours"][k]]) / np.median([v for v, _ in values["asv's defaults"][k]])
                   for k in values["ours"])
    print(f"  ours / asv's defaults, each row's median over processes: min {shift[0]:.3f}, "
          f"median {np.median(shift):.3f}, max {shift[-1]:.3f}")
    ratio = np.median(seconds["asv's defaults"]) / np.median(seconds["ours"])
    print(f"  a process of ours takes 1/{ratio:.2f} of asv's defaults' time; the twin's "
          f"{np.median(seconds['twin']) / np.median(seconds['ours']):.2f}x ours")


if __name__ == "__main__":
    main()
