"""The two deterministic channels beside instruction counts (issue 50): simulated cycles and system calls.

A small asv suite written in a temporary folder, in two versions: 64 TimerSuite rows of torch ops (8 ops x
4 sizes x 2 dtypes, the same on both sides) and a `walk` row, written as the suite-validation wall-effects
injection is (evaluation/suite_validation.py, --wall-effects): each run takes STEPS steps through a random
single cycle of a table, TINY_TABLE entries on the base and HUGE_TABLE on the head (far beyond the simulated
8 MiB last-level cache), so the same instructions on both sides, and a `pid` row, whose head calls
os.getpid() once more a run. Each side's jobs are counted by the counting worker of `torchbench alert`
(torchbench_core.asv_worker counts, one valgrind process), once with the caches and branches simulated and
once without (TORCHBENCH_COUNTS_SIMULATE=0), and traced once (the `syscalls` mode, under strace).

Printed: per row that differs and a few that do not, base and head instruction counts and simulated cycles a
run, with their ratios; the seconds each counting took and the simulated one's ratio to plain counting; each
side's system calls a run of the rows with any, and whether every row's were exact (the 2N-call region has
exactly twice the N-call region's calls of every type).

    python evaluation/sim_channels.py [--sides base head] [--no-plain] [--json PATH]
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

TINY_TABLE, HUGE_TABLE, STEPS = 64, 1 << 20, 200
# a random single cycle through n entries (as suite_validation's walk_table injects one), made natively fast
# (numpy); the statement takes `steps` steps through it, going on where the last run stopped
WALK_SETUP = """
import numpy as np
order = np.random.default_rng(0).permutation(n)
cycle = np.empty(n, dtype=np.int64)
cycle[order] = np.roll(order, -1)
table = cycle.tolist()
at = [0]
"""
WALK = "a = at[0]\nfor _ in range({steps}):\n    a = table[a]\nat[0] = a"

SUITE = '''"""64 torch-op rows, a table walk and a getpid row (evaluation/sim_channels.py)."""

import torch

from torchbench_core.asv_suite import TimerSpec, TimerSuite

TABLE = {table}
PIDS = {pids}
OPS = {{"add": "torch.add(a, b)", "sub": "torch.sub(a, b)", "mul": "torch.mul(a, b)", "div": "torch.div(a, b)",
       "neg": "torch.neg(a)", "sum": "torch.sum(a)", "matmul": "torch.matmul(a, b)", "cat": "torch.cat([a, b])"}}
SIZES = {{"1": 1, "4x4": 4, "16x16": 16, "64x64": 64}}
DTYPES = {{"float32": "torch.float32", "float64": "torch.float64"}}
MAKE = "a = torch.ones({{n}}, {{n}}, dtype={{dtype}}); b = torch.full(({{n}}, {{n}}), 2.0, dtype={{dtype}})"
WALK_SETUP, WALK = {walk_setup!r}, {walk!r}
PID = "import os\\nx = torch.ones(1)\\nfor _ in range(PIDS):\\n    os.getpid()\\ntorch.neg(x)"


class Ops(TimerSuite):
    min_run_time = 0.05
    timers = [
        TimerSpec(stmt, setup=MAKE.format(n=n, dtype=dtype), label=op, sub_label=kind, description=size)
        for op, stmt in OPS.items()
        for size, n in SIZES.items()
        for kind, dtype in DTYPES.items()
    ] + [
        TimerSpec(WALK, setup=WALK_SETUP, globals={{"n": TABLE}}, label="walk", sub_label="list",
                  description="{steps} steps"),
        TimerSpec(PID, globals={{"PIDS": PIDS}}, label="pid", sub_label="os.getpid", description="per run"),
    ]
'''


def write_suite(folder: Path, side: str) -> Path:
    """The suite of `side` ("base" or "head") in FOLDER/<side>/benchmarks."""
    suite = folder / side / "benchmarks"
    suite.mkdir(parents=True, exist_ok=True)
    (suite / "__init__.py").write_text("")
    table, pids = (TINY_TABLE, 0) if side == "base" else (HUGE_TABLE, 1)
    (suite / "bench_sim.py").write_text(SUITE.format(table=table, pids=pids, steps=STEPS, walk_setup=WALK_SETUP,
                                                     walk=WALK.format(steps=STEPS)))
    return suite


def jobs_of(suite: Path) -> tuple[list[list], dict[str, str]]:
    """Every row's [name, index], and each job key's row name."""
    from torchbench.asv_bridge.worker import combinations
    from torchbench_core.asv_worker import list_benchmarks

    jobs, names = [], {}
    for b in list_benchmarks(suite):
        for index, combo in combinations(b):
            jobs.append([b["name"], index])
            label, *rest = [c.strip("'") for c in combo[:3]]  # a TimerSuite row: label(sub_label, description)
            names[f"{b['name']}|{index}"] = f"{label}({', '.join(rest)})"
    return jobs, names


def worker(mode: str, suite: Path, jobs: list[list], env: dict[str, str] | None = None) -> tuple[dict, float]:
    """The asv worker's answer in `mode` for `jobs`, and the seconds it took."""
    with tempfile.TemporaryDirectory() as tmp:
        jobs_file, out = Path(tmp) / "jobs.json", Path(tmp) / "out.json"
        jobs_file.write_text(json.dumps(jobs))
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "torchbench_core.asv_worker", mode, str(suite), "--jobs",
                               str(jobs_file), "--out", str(out)], capture_output=True, text=True,
                              env=dict(os.environ, **(env or {})))
        took = time.monotonic() - started
        if proc.returncode != 0:
            raise SystemExit(f"the {mode} worker failed:\n{proc.stderr[-3000:]}")
        return json.loads(out.read_text()), took


def mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def print_side(side: str, r: dict) -> None:
    """One side's lines: rows, seconds, counts with and without simulation, system calls."""
    simulated, plain, traced, seconds = r["simulated"], r["plain"], r["syscalls"], r["seconds"]
    rows = sum(1 for v in simulated.values() if "counts" in v)
    print(f"== {side}: {rows} rows ({len(simulated)} parameter combinations); counting with simulation "
          f"{seconds['simulated']:.1f} s" + ("" if plain is None else f", without {seconds['plain']:.1f} s "
                                                                    f"(x{seconds['simulated'] / seconds['plain']:.2f})")
          + f"; system calls traced in {seconds['syscalls']:.1f} s")
    if plain is not None:
        moved = {r["names"][k]: f"{mean(v['counts']) / mean(plain[k]['counts']) - 1:+.3%}"
                 for k, v in simulated.items() if "counts" in v and v["counts"] != plain[k].get("counts")}
        print(f"   instruction counts identical with and without simulation: {rows - len(moved)} of {rows} rows"
              + (f"; moved: {moved}" if moved else ""))
    done = [v["syscalls"] for v in traced.values() if "syscalls" in v]
    print(f"   system calls exact (the 2N-call region has 2x the N-call region's calls of every type): "
          f"{sum(1 for v in done if v['exact'])} of {len(done)} rows traced; "
          f"{sum(1 for v in traced.values() if 'error' in v)} failed")
    for key, v in traced.items():
        if (v.get("syscalls") or {}).get("per_call") or "error" in v:
            print(f"   {r['names'].get(key, key)}: {v['syscalls'] if 'syscalls' in v else v['error']}")


def print_pair(base: dict, head: dict) -> None:
    """Base against head: the rows that differ and two that do not, then the largest change of the rest."""
    print(f"{'row':<28}{'Ir base':>10}{'Ir head':>10}{'ratio':>8}{'cycles base':>13}{'cycles head':>13}{'ratio':>8}")
    others = []
    for key, name in base["names"].items():
        b, h = base["simulated"].get(key, {}), head["simulated"].get(key, {})
        if "cycles" not in b or "cycles" not in h:
            if "error" in b or "error" in h:
                print(f"{name:<28} {b.get('error') or h.get('error')}")
            continue
        ir_b, ir_h, cy_b, cy_h = mean(b["counts"]), mean(h["counts"]), mean(b["cycles"]), mean(h["cycles"])
        if name.startswith(("walk", "pid", "add(float32, 1)", "matmul(float64, 64x64)")):
            print(f"{name:<28}{ir_b:>10.0f}{ir_h:>10.0f}{ir_h / ir_b:>8.4f}{cy_b:>13.0f}{cy_h:>13.0f}"
                  f"{cy_h / cy_b:>8.4f}")
            for side, row in (("base", b), ("head", h)) if name.startswith("walk") else ():
                print(f"   simulated events a run, {side}: "
                      + ", ".join(f"{k} {v:.1f}" for k, v in row["events"][0].items()))
        if not name.startswith(("walk", "pid")):
            others.append((ir_h / ir_b, cy_h / cy_b))
    print(f"the other {len(others)} rows, the same code on both sides: largest change of Ir "
          f"{max(abs(i - 1) for i, _ in others):.2%}, of simulated cycles {max(abs(c - 1) for _, c in others):.2%}")
    for key, name in base["names"].items():
        if name.startswith("pid") and "syscalls" in base["syscalls"][key]:
            print(f"{name}, system calls a run: base {base['syscalls'][key]['syscalls']['per_call']}, "
                  f"head {head['syscalls'][key]['syscalls']['per_call']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sides", nargs="+", default=["base", "head"], choices=["base", "head"])
    parser.add_argument("--no-plain", action="store_true", help="skip the counting without simulation")
    parser.add_argument("--json", type=Path, help="write the record here")
    parser.add_argument("--replay", type=Path, help="print a recorded run (--json) instead of measuring")
    args = parser.parse_args()
    record: dict = json.loads(args.replay.read_text()) if args.replay else {"sides": {}}
    with tempfile.TemporaryDirectory(prefix="sim_channels_") as tmp:
        for side in [] if args.replay else args.sides:
            suite = write_suite(Path(tmp), side)
            jobs, names = jobs_of(suite)
            # the same environment but for one character: the environment's size moves the memory layout,
            # and with it the counts (a few tenths of a percent), whatever valgrind simulates
            simulated, sim_s = worker("counts", suite, jobs, {"TORCHBENCH_COUNTS_SIMULATE": "1"})
            plain, plain_s = (None, None) if args.no_plain else worker("counts", suite, jobs,
                                                                     {"TORCHBENCH_COUNTS_SIMULATE": "0"})
            traced, trace_s = worker("syscalls", suite, jobs)
            record["sides"][side] = {"names": names, "simulated": simulated, "plain": plain, "syscalls": traced,
                                     "seconds": {"simulated": sim_s, "plain": plain_s, "syscalls": trace_s}}
            print_side(side, record["sides"][side])
    if args.replay:
        for side, r in record["sides"].items():
            print_side(side, r)
    if len(record["sides"]) == 2:
        print_pair(record["sides"]["base"], record["sides"]["head"])
    if args.json:
        args.json.write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
