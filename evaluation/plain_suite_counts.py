"""Instruction counts for a plain asv suite (issue 27): a library's own `time_` methods, no torchbench_core.

A throwaway library (built with flit) and a 42-row asv suite written as asv's
docs write one (classes with `params`, `setup` and `time_` methods, one with
`setup_cache`): seven pure-Python functions and seven torch ops, three sizes
each. Three commits: the base; a README edit (A/A: identical code); the base
with a +2% compute change of one function (`work`, an extra range sum of
1/50 of its length; its three rows are the targets).

Each pair is compared by `torchbench alert` as a user runs it (one --out, so
the second pair's base counts come from the cache), at a short wall-time
budget: this script is about the counts channel, whose decisions do not
depend on the rounds. Then the A/A pair again, to time the counts phase from
the cache. Beside each: `asv continuous` with its defaults on the same pair.

Printed: rows decided by counts (A/A: false ones; +2%: the targets found,
and any other row), each target's count change, the largest count change of
an identical row, and the counts phase's seconds a pair (both sides counted
at once, one valgrind process a side) against the goal of 90 s (10 s cached).

    python evaluation/plain_suite_counts.py [--keep]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import git

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "evaluation"))

from alert_validation import asv_conf, asv_continuous  # noqa: E402

PYPROJECT = """\
[build-system]
requires = ["flit_core>=3.4,<4"]
build-backend = "flit_core.buildapi"

[project]
name = "plainlib"
version = "0.1"
description = "a throwaway library with a plain asv suite"
dependencies = ["torch"]
"""
LIBRARY = '''"""plainlib: small functions of the sizes a library's hot paths have."""


def work(n):
    return sum(range(n)){extra}


def squares(n):
    return [i * i for i in range(n)]


def index(n):
    return {{i: str(i) for i in range(n)}}


def joined(n):
    return ",".join(map(str, range(n)))


def evens(n):
    return list(filter(lambda i: i % 2 == 0, range(n)))


def ordered(data):
    return sorted(data)


def counted(data):
    out = {{}}
    for x in data:
        out[x % 7] = out.get(x % 7, 0) + 1
    return out
'''
EXTRA = " + sum(range(n // 50))  # +2% compute"
SUITE = '''"""A plain asv suite: classes, params, setup, time_ methods (no torchbench_core)."""

import random

import torch

import plainlib


class PurePython:
    params = [["work", "squares", "index", "joined", "evens"], [10, 100, 1000]]
    param_names = ["function", "n"]

    def setup(self, function, n):
        self.f = getattr(plainlib, function)

    def time_call(self, function, n):
        self.f(n)


class OnData:
    params = [["ordered", "counted"], [10, 100, 1000]]
    param_names = ["function", "n"]

    def setup_cache(self):
        rng = random.Random(0)
        return {n: [rng.randrange(10 * n) for _ in range(n)] for n in (10, 100, 1000)}

    def setup(self, data, function, n):
        self.f, self.data = getattr(plainlib, function), list(data[n])

    def time_call(self, data, function, n):
        self.f(self.data)


class TorchOps:
    params = [["add", "mul", "neg", "sum", "cat", "matmul", "clone"], [1, 4, 16]]
    param_names = ["op", "side"]

    def setup(self, op, side):
        self.a, self.b = torch.ones(side, side), torch.full((side, side), 2.0)
        self.call = {"add": lambda: torch.add(self.a, self.b), "mul": lambda: torch.mul(self.a, self.b),
                     "neg": lambda: torch.neg(self.a), "sum": lambda: torch.sum(self.a),
                     "cat": lambda: torch.cat([self.a, self.b]), "matmul": lambda: torch.matmul(self.a, self.b),
                     "clone": lambda: self.a.clone()}[op]

    def time_op(self, op, side):
        self.call()
'''
TARGET = "PurePython.time_call('work'"  # the three rows of the changed function
# The same 42 operations as TimerSuite rows (issue 27's twin suite): what a TimerSuite author would write
TWIN_SUITE = '''"""The plain suite's 42 operations, written as TimerSuite rows (its twin)."""

import random

from torchbench_core.asv_suite import TimerSpec, TimerSuite

DATA = "rng = random.Random(0); data = [rng.randrange(10 * {n}) for _ in range({n})]"
TORCH = "a, b = torch.ones({side}, {side}), torch.full(({side}, {side}), 2.0)"
OPS = {"add": "torch.add(a, b)", "mul": "torch.mul(a, b)", "neg": "torch.neg(a)", "sum": "torch.sum(a)",
       "cat": "torch.cat([a, b])", "matmul": "torch.matmul(a, b)", "clone": "a.clone()"}


class Twin(TimerSuite):
    timers = (
        [TimerSpec(f"plainlib.{f}({n})", setup="import plainlib", label="PurePython", sub_label=f,
                   description=str(n)) for f in ("work", "squares", "index", "joined", "evens") for n in (10, 100, 1000)]
        + [TimerSpec(f"plainlib.{f}(data)", setup="import plainlib, random; " + DATA.format(n=n), label="OnData",
                     sub_label=f, description=str(n)) for f in ("ordered", "counted") for n in (10, 100, 1000)]
        + [TimerSpec(stmt, setup=TORCH.format(side=side), label="TorchOps", sub_label=op, description=str(side))
           for op, stmt in OPS.items() for side in (1, 4, 16)])
'''
# a wall-time-only change of one row, index(1000): page faults, whose kernel time counts cannot see (a
# write to a fresh page of a reserved, untouched mapping: a few hundred instructions of Python under callgrind,
# 0.03% of that row's ~1.26 million, and 2-4 microseconds of the kernel zeroing a page, ~5% of its ~80)
FRESH_PAGES = """
import mmap

_FRESH = mmap.mmap(-1, 1 << 28)  # reserved, never touched: each first write to a page is a page fault
_FRESH.madvise(mmap.MADV_NOHUGEPAGE)  # 4 KiB pages, one fault each (a huge page would serve 512 writes)
_at = [0]


def _fault(pages):
    for _ in range(pages):
        if _at[0] >= len(_FRESH):
            _FRESH.madvise(mmap.MADV_DONTNEED)  # give the pages back: the next writes fault again
            _at[0] = 0
        _FRESH[_at[0]] = 1
        _at[0] += mmap.PAGESIZE
"""
WALL_ONLY = "    if n >= 1000:  # +{effect:.0%} of wall time, not of instructions: {k} page fault(s)\n        _fault({k})\n"
WALL_TARGET = "PurePython.time_call('index', 1000)"
# a memory-only change (issue 50's simulated cycles): the library gains a lookup that walks a table (one
# random cycle through all its entries, going on where the last call stopped), with its own suite rows, in
# "memory base"; the head only makes the table larger, far beyond the simulated 8 MiB last-level cache: the
# same instructions a step, each step a cache miss (evaluation/sim_channels.py measured the same walk at
# equal counts and 2.2x the simulated cycles)
MEMORY_LIBRARY = """

TABLE_SIZE = {size}


def _cycle(n):
    import torch

    order = torch.randperm(n, generator=torch.Generator().manual_seed(0))
    cycle = torch.empty(n, dtype=torch.int64)
    cycle[order] = order.roll(-1)
    return cycle.tolist()


_TABLE, _AT = _cycle(TABLE_SIZE), [0]


def lookup(steps):
    a = _AT[0]
    for _ in range(steps):
        a = _TABLE[a]
    _AT[0] = a
    return a
"""
MEMORY_SUITE = """

class Lookup:
    params = [[100, 1000]]
    param_names = ["steps"]

    def time_lookup(self, steps):
        plainlib.lookup(steps)
"""
MEMORY_SIZES = (64, 1 << 20)  # the table's entries, base and head
MEMORY_TARGET = "Lookup.time_lookup"
# a system call added to every call of one function (issue 50's system-call channel): a fork check, as
# libraries write one (glibc does not cache getpid: one real system call a call)
SYSCALL_CHECK = """import os

_PID = os.getpid()


def joined(n):
    if os.getpid() != _PID:  # a forked child: nothing to reset here, the check is the cost
        pass
"""
SYSCALL_TARGET = "PurePython.time_call('joined'"


def twin_key(title: str) -> tuple[str, str, str] | None:
    """(class, function or op, size) of a plain row's name or a twin row's title, so the two can be paired."""
    import re

    m = re.search(r"\.(\w+)\.time_\w+\('(\w+)', (\d+)\)", title) or None
    if m:
        return m.group(1), m.group(2), m.group(3)
    m = re.match(r"(\w+) · (\d+) \((\w+)\)", title)
    return (m.group(3), m.group(1), m.group(2)) if m else None


def wall_only_pages(effect: float) -> int:
    """Page faults (FRESH_PAGES' _fault) that add `effect` of index(1000)'s time, timed here (the fastest of 7)."""
    import timeit

    space: dict = {}
    exec(FRESH_PAGES + LIBRARY.format(extra=""), space)
    index = min(timeit.repeat(lambda: space["index"](1000), number=200, repeat=7)) / 200
    page = min(timeit.repeat(lambda: space["_fault"](4), number=1000, repeat=7)) / 1000 / 4
    return max(1, round(effect * index / page))


def make_validation_repo(path: Path, effects: list[float], wall_effect: float) -> dict:
    """The plain suite's repository with every commit the validation compares: {"base", "docs" (A/A),
    "+2%"... (compute, `work` slowed by an extra range sum of that share of its length), "wall" (index(1000)
    slowed by page faults: wall time only), "memory base" and "memory" (a table walk's rows, and the
    table grown: simulated cache misses, the same instructions), "syscall" (a getpid a call of `joined`), "twin" and "twin docs" (the same library, the suite as
    TimerSuite rows), "both" and "both docs" (the plain suite and its twin side by side: the same
    processes time both)}, and "wall_pages"."""
    base, docs, _ = make_repo(path)
    repo = git.Repo(path)
    out = {"base": base, "docs": docs}

    def commit(parent: str, files: dict, message: str) -> str:
        repo.git.checkout("--detach", parent)
        for rel, text in files.items():
            (path / rel).write_text(text)
        repo.index.add(list(files))
        return repo.index.commit(message).hexsha
    for effect in effects:
        extra = f" + sum(range(n // {round(1 / effect)}))  # +{effect:.0%} compute"
        out[f"+{effect:.0%}"] = commit(base, {"plainlib/__init__.py": LIBRARY.format(extra=extra)},
                                       f"work: +{effect:.0%} compute")
    k = wall_only_pages(wall_effect)
    body = LIBRARY.format(extra="").replace("def index(n):\n", "def index(n):\n" + WALL_ONLY.format(effect=wall_effect, k=k))
    body = body.replace('"""\n\n\n', '"""\n' + FRESH_PAGES + "\n\n", 1)
    out["wall"] = commit(base, {"plainlib/__init__.py": body}, f"index(1000): +{wall_effect:.0%} wall time")
    out["wall_pages"] = k
    library = LIBRARY.format(extra="")
    out["memory base"] = commit(base, {"plainlib/__init__.py": library + MEMORY_LIBRARY.format(size=MEMORY_SIZES[0]),
                                       "benchmarks/bench_plain.py": SUITE + MEMORY_SUITE},
                                f"lookup: a walk through a table of {MEMORY_SIZES[0]} entries, and its rows")
    out["memory"] = commit(out["memory base"],
                           {"plainlib/__init__.py": library + MEMORY_LIBRARY.format(size=MEMORY_SIZES[1])},
                           f"lookup: the table grows to {MEMORY_SIZES[1]} entries (the same steps)")
    assert "def joined(n):\n" in library
    out["syscall"] = commit(base, {"plainlib/__init__.py": library.replace("def joined(n):\n", SYSCALL_CHECK, 1)},
                            "joined: a fork check (one getpid system call a call)")
    out["twin"] = commit(base, {"benchmarks/bench_plain.py": TWIN_SUITE}, "the suite as TimerSuite rows")
    out["twin docs"] = commit(out["twin"], {"README": "plainlib\n\nA note.\n"}, "README: a note")
    out["both"] = commit(base, {"benchmarks/bench_twin.py": TWIN_SUITE}, "the suite and its TimerSuite twin")
    out["both docs"] = commit(out["both"], {"README": "plainlib\n\nA note.\n"}, "README: a note")
    repo.git.checkout("--detach", base)
    return out


def make_repo(path: Path) -> tuple[str, str, str]:
    repo = git.Repo.init(path, initial_branch="main")
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "bench").set_value("user", "email", "bench@example.com")
    files = {"pyproject.toml": PYPROJECT, "plainlib/__init__.py": LIBRARY.format(extra=""),
             "benchmarks/__init__.py": "", "benchmarks/bench_plain.py": SUITE, "README": "plainlib\n"}
    for rel, text in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    repo.index.add(list(files))
    base = repo.index.commit("plainlib and its asv suite").hexsha
    (path / "README").write_text("plainlib\n\nA note.\n")
    repo.index.add(["README"])
    docs = repo.index.commit("README: a note").hexsha
    repo.git.checkout("--detach", base)
    (path / "plainlib/__init__.py").write_text(LIBRARY.format(extra=EXTRA))
    repo.index.add(["plainlib/__init__.py"])
    slower = repo.index.commit("work: +2% compute").hexsha
    repo.git.checkout("--detach", base)
    return base, docs, slower


def alert(repo: Path, base: str, head: str, out: Path, log: Path, budget: float) -> tuple[dict, float]:
    start = time.perf_counter()
    with open(log, "w") as f:
        proc = subprocess.run([sys.executable, "-m", "torchbench", "alert", "--repo", str(repo), "--base", base,
                               "--head", head, "--out", str(out), "--env-dir", str(out.parent / "envs"),
                               "--budget-minutes", str(budget), "--min-rounds", "2", "--no-profile",
                               "--json", str(log.with_suffix(".json"))], stdout=f, stderr=subprocess.STDOUT,
                              text=True, cwd=ROOT, check=False)
    report = log.with_suffix(".json")
    if proc.returncode not in (0, 1, 2, 3) or not report.exists():
        sys.exit(f"torchbench alert exited {proc.returncode}; its log: {log}\n{log.read_text()[-3000:]}")
    return json.loads(report.read_text()), time.perf_counter() - start


def summary(name: str, report: dict, seconds: float, targeted: bool) -> dict:
    rows = report["rows"]
    by_counts = [r["name"] for r in rows if r.get("decided_by") == "instruction counts"]
    targets = [r for r in rows if TARGET in r["name"]]
    counted = [r for r in rows if r.get("counts_delta") is not None]
    identical = [r for r in counted if not (targeted and TARGET in r["name"])]
    labels: dict[str, int] = {}
    for r in rows:
        labels[r["label"]] = labels.get(r["label"], 0) + 1
    return {"pair": name, "rows": len(rows), "counted": len(counted),
            "decided_by_counts": by_counts, "false_by_counts": [n for n in by_counts if not (targeted and TARGET in n)],
            "targets": [{"name": r["name"], "status": r["status"], "decided_by": r.get("decided_by"),
                         "counts_delta": r.get("counts_delta")} for r in targets] if targeted else [],
            "largest_identical_delta": max((abs(r["counts_delta"]) for r in identical), default=None),
            "counts_seconds": report["time_spent"]["phases"].get("instruction counts"),
            "tally": report["time_spent"].get("instruction_counts"), "alert_seconds": seconds, "labels": labels}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget-minutes", type=float, default=1.0, help="each alert's (default 1: counts only)")
    parser.add_argument("--no-asv", action="store_true", help="leave out asv continuous")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="plain-suite-counts-"))
    print(f"== work folder {tmp}", flush=True)
    try:
        path = tmp / "plainlib"
        path.mkdir()
        base, docs, slower = make_repo(path)
        out = tmp / "out"
        results = []
        for name, head, targeted in (("A/A", docs, False), ("+2% compute", slower, True),
                                     ("A/A again (cached)", docs, False)):
            print(f"== torchbench alert {name}: {base[:8]}..{head[:8]}", flush=True)
            report, seconds = alert(path, base, head, out, tmp / f"alert-{len(results)}.log", args.budget_minutes)
            row = summary(name, report, seconds, targeted)
            if not args.no_asv and not name.endswith("(cached)"):
                conf = asv_conf(out / "asv.conf.json", tmp / f"asv-continuous-{len(results)}")
                marks, asv_seconds = asv_continuous(conf, base, head)
                flagged = [n for n, m in marks.items() if m in ("+", "-")]
                row["asv_continuous"] = {"rows": len(marks), "flagged": flagged, "seconds": asv_seconds,
                                         "targets_flagged": [n for n in flagged if TARGET in n]}
            results.append(row)
            print(json.dumps(row, indent=1), flush=True)
        print("\n== counts of a plain asv suite (42 time_ rows): ours beside asv continuous")
        print(f"  {'pair':22} {'counted':>8} {'by counts':>10} {'false':>6} {'targets':>8} "
              f"{'max |delta| A/A':>16} {'counts s':>9} {'asv cont. flagged':>18}")
        for r in results:
            found = sum(t["decided_by"] == "instruction counts" and t["status"] == "regressed" for t in r["targets"])
            a = r.get("asv_continuous")
            asv = f"{len(a['flagged'])}/{a['rows']} ({len(a['targets_flagged'])} target)" if a else "-"
            delta = f"{r['largest_identical_delta']:.3%}" if r["largest_identical_delta"] is not None else "-"
            targets = f"{found}/{len(r['targets'])}" if r["targets"] else "-"
            print(f"  {r['pair']:22} {r['counted']:>3}/{r['rows']:<4} {len(r['decided_by_counts']):>10} "
                  f"{len(r['false_by_counts']):>6} {targets:>8} {delta:>16} {r['counts_seconds'] or 0:>9.1f} {asv:>18}")
        for r in results:
            for t in r["targets"]:
                print(f"  target {t['name']}: counts {t['counts_delta']:+.2%}, {t['status']} ({t['decided_by']})")
        print("  goals: +2% found by counts in all 3 target rows, no A/A row decided by counts, the counts phase "
              "<= 90 s a side (both sides at once), <= 10 s cached")
    finally:
        if args.keep:
            print(f"(work folder {tmp} kept)")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
