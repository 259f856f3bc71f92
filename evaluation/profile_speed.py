"""`torchbench profile` against a bare py-spy recording of the same worker: what does our part cost?

Measured in one run, interleaved, over the example history's last 2 commits
and their 6 `Dispatch` cases (the example's __torch_function__ suite, what a
default `torchbench profile` records), 1 s a case at 200 Hz with --native:

  ours    torchbench profile HEAD~2..HEAD --rerun: the asv environment check,
          then per commit the suite listing, one benchmark process, py-spy
          attached once the suite is imported, the split into 6 profiles, 6
          SVGs drawn, 18 files written. Per commit: the report's seconds.
  anchor  py-spy record --native --rate 200 --format raw -- python -m
          torchbench_core.asv_worker profile (the same worker, the same 6 jobs,
          the same 1 s each), py-spy starting the process itself; nothing
          listed, split or drawn. Per commit: its wall time.
  floor   6 cases x 1 s: the benchmark loops themselves.

The environment and the two commits' installations are made first (a warm-up
run, reported) and shared by every repeat.

    python evaluation/profile_speed.py [--repeats 3] [--env-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import git

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from torchbench.asv_bridge.driver import harness_env  # noqa: E402
from torchbench.profiling.flamegraph import parse_collapsed  # noqa: E402
from torchbench.project import example  # noqa: E402
from torchbench.profiling.record import case_stacks  # noqa: E402

SECONDS, RATE = 1.0, 200
SUITE_BENCHMARK = "bench_dispatch.Dispatch.track_time"


def check(proc: subprocess.CompletedProcess, what: str) -> None:
    if proc.returncode != 0:
        sys.exit(f"{what} failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


def ours(repo: Path, out: Path, envs: Path, rerun: bool) -> tuple[float, dict[str, float], str]:
    """Wall time of the whole command, the report's seconds per commit, and its output."""
    cmd = [sys.executable, "-m", "torchbench", "profile", "HEAD~2..HEAD", "--repo", str(repo), "--out", str(out),
           "--env-dir", str(envs), "--seconds", str(SECONDS), "--rate", str(RATE)] + (["--rerun"] if rerun else [])
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=harness_env())
    wall = time.perf_counter() - start
    check(proc, "torchbench profile")
    per_commit = {}
    for line in proc.stdout.split("== profiles in")[-1].splitlines()[2:]:
        fields = line.split()
        if len(fields) >= 6 and fields[1].isdigit():
            per_commit[fields[0]] = float(fields[5])
    return wall, per_commit, proc.stdout


def anchor(python: Path, site: Path, suite: Path, work: Path) -> tuple[float, int, int]:
    """A bare py-spy recording of the worker running the 6 jobs: wall time, samples in the loops, all samples."""
    results, raw = work / "results.jsonl", work / "bare.collapsed"
    for path in (results, raw):
        path.unlink(missing_ok=True)
    jobs = json.dumps([[SUITE_BENCHMARK, i] for i in range(6)]) + "\n"  # the worker reads its jobs on stdin
    cmd = [shutil.which("py-spy"), "record", "--native", "--rate", str(RATE), "--format", "raw", "--output", str(raw),
           "--", str(python), "-m", "torchbench_core.asv_worker", "profile", str(suite), "--out", str(results),
           "--seconds", str(SECONDS)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, input=jobs, capture_output=True, text=True,
                          env=dict(harness_env(), PYTHONPATH=str(site)))
    wall = time.perf_counter() - start
    if not raw.exists():  # py-spy#759 may exit 1 after writing; a missing file is a real failure
        check(proc, "bare py-spy record")
    stacks = parse_collapsed(raw.read_text())
    markers = [json.loads(line)["marker"] for line in results.read_text().splitlines() if '"marker"' in line]
    inside = sum(sum(case_stacks(stacks, m).values()) for m in markers)
    return wall, inside, sum(stacks.values())


def median(values: list[float]) -> str:
    return f"{statistics.median(values):6.2f} s  (runs: {', '.join(f'{v:.2f}' for v in values)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--env-dir", type=Path, help="an asv environment folder to reuse (default: a fresh one)")
    args = parser.parse_args()
    if shutil.which("py-spy") is None:
        sys.exit("py-spy is not on PATH")
    tmp = Path(tempfile.mkdtemp(prefix="profile-speed-"))
    try:
        repo = example.materialize(tmp / "tensorlib")
        envs = (args.env_dir or tmp / "envs").resolve()
        out = tmp / "out"
        wall, _, _ = ours(repo, out, envs, rerun=False)
        print(f"warm-up run (environment, 2 installations, 12 profiles): {wall:.1f} s")
        python = next(envs.glob("*/bin/python"))
        shas = [c.hexsha for c in git.Repo(repo).iter_commits("HEAD", max_count=2)][::-1]
        sites = {sha[:8]: out / "installs" / sha[:12] for sha in shas}
        suite = repo / "benchmarks"

        walls: list[float] = []
        per_commit: dict[str, list[float]] = {"ours": [], "anchor": []}
        samples: dict[str, list[int]] = {"anchor in loops": [], "anchor in all": []}
        ours_samples: list[int] = []
        for i in range(args.repeats):
            for short, site in sites.items():
                seconds, inside, everything = anchor(python, site, suite, tmp)
                per_commit["anchor"].append(seconds)
                samples["anchor in loops"].append(inside)
                samples["anchor in all"].append(everything)
            wall, mine, _ = ours(repo, out, envs, rerun=True)
            walls.append(wall)
            per_commit["ours"] += [mine[s] for s in sites]
            ours_samples += [json.loads(p.read_text())["samples"] for p in (out / "profiles").glob("*/*/*.json")]

        floor = 6 * SECONDS
        o, a = statistics.median(per_commit["ours"]), statistics.median(per_commit["anchor"])
        print(f"\n2 commits x 6 cases x {SECONDS:g} s at {RATE} Hz, --native; medians of {args.repeats} runs "
              "(interleaved), seconds per commit:")
        print(f"  ours (report, per commit)            {median(per_commit['ours'])}")
        print(f"  anchor: bare py-spy record, same worker {median(per_commit['anchor'])}")
        print(f"  floor: the benchmark loops             {floor:6.2f} s")
        print(f"  ours/anchor {o / a:5.2f}   ours/floor {o / floor:5.2f}   anchor/floor {a / floor:5.2f}")
        print(f"  ours, whole command for 2 commits (environment check included): {median(walls)}")
        loops, everything = statistics.median(samples["anchor in loops"]), statistics.median(samples["anchor in all"])
        print(f"\nsamples per case: ours median {statistics.median(ours_samples):.0f}; anchor median "
              f"{loops / 6:.0f} in the loops, of {everything:.0f} per recording "
              f"({100 * (1 - loops / everything):.0f}% spent on start-up, imports and set-up)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
