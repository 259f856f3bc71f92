"""Validation of `torchbench alert` at suite scale, beside `asv continuous` and `asv compare` on the same pairs.

The 6-row version is evaluation/alert_validation.py; this one measures a suite of 69 rows, in one run:

* The example library (torchbench.project.example) with one more commit, B, that adds
  benchmarks/bench_suite.py: 7 torch ops (add, sub, mul, neg, sum, matmul, cat) x 3 types (Tensor,
  LoggingTensor, TensorLike) x 3 sizes (1, 4x4, 16x16 floats), 63 rows beside bench_dispatch.py's 6.
* A/A: B against a commit that edits the README only, then that one against a second README edit
  (--aa-pairs): identical measured code, so every flagged row is a false alert.
* Regressions of a narrow code path: a calibrated busy loop in TensorLike's torch.mul handler, sized
  for +5% and +10% of those rows' time (--effects). Only the 4 rows that call torch.mul on a
  TensorLike (3 of bench_suite, 1 of bench_dispatch) run it: they are the targets, each one changed
  row among 69 (power per target row); a flagged row of the other 65 is a false alert.
* Wall-time-only regressions of the same path (--wall-effects; issue 26): torch.mul on a TensorLike takes
  k steps through a table (TABLE). The pair's base walks a table of 64 entries, its head one large enough
  that the steps miss the cache, sized for +5% and +10%: the same instructions on both sides (the targets'
  counts change is printed), so the counts cannot decide and the wall time must.
* --designs auto alternating duet: our alert in each design of its rounds (alternating processes; duets, both
  processes at once on a core each, paired by round) on the same pairs, one after the other, each repeat
  starting one design later (over as many repeats as designs, each runs first once: `rotated`). Rows
  stop early where decided, so the designs' figures are minutes to a verdict, not MDEs at equal minutes
  (--min-rounds is a floor on the rounds that runs past the budget: not a way to equal minutes).
* --own-suite: this project's own suite (benchmarks/), A/A: two consecutive commits of this
  repository that change only tests (--own-base, --own-head).
* --plain-suite (instead of the example; issue 27): a plain asv suite as asv's docs write one
  (plain_suite_counts.py: 42 `time_` rows with params, setup and setup_cache, no torchbench_core import):
  A/A, a lone compute change of one function (its 3 rows; --plain-effects), a lone wall-time-only change
  of one row (index(1000) slowed by page faults, whose kernel time counts cannot see; --wall-effect), a
  memory-only change (a table walk's two rows, its table grown beyond the simulated caches: the same
  instructions; issue 50's simulated cycles), a system call added to every call of one function (`joined`
  gains a getpid fork check: its 3 rows; issue 50's system-call channel), the twin suite (the same 42
  operations as TimerSuite rows) A/A, and both suites in one (84 rows, A/A: every process times each
  operation both ways). Printed besides: the plain rows left inconclusive that
  their twin decided and the two median MDEs (the two A/A runs, and the plain and twin rows of the same
  processes), each target's channel and label, and the counts phase's minutes. --plain-pairs picks pairs.

For each pair (--repeats times): `torchbench alert` with its default flags (instruction counts, the
9-minute budget; --budget-minutes, --min-rounds and --no-counts are for quick trials only), then
`asv continuous` with its defaults, then `asv compare` (factor 1.1, its default) of `asv run` of
each commit (defaults), in the alert's asv configuration and environment. asv's flagged rows are
counted with asv's own decision function (asv continuous: alert_validation.asv_continuous, or, when
asv continuous exits 2 because a benchmark failed, `asv compare` of the results it saved; asv compare:
the marks of its printed table). Rows that fail (ours or asv's) are left out of the counts and named.

Reported per pair kind: false alerts per row (ours in each design / asv continuous / asv compare),
target rows found (the same), minutes per verdict, and, per design of ours, the minimum detectable
effect per row (the report's "mde": median and range) and the rounds a minute. --json PATH writes the
summary and every run.
Exit status 0 when every step ran (whatever the figures); 2 when a step failed, named.

    python evaluation/suite_validation.py [--repeats 1] [--designs auto alternating duet] [--own-suite]
                                          [--plain-suite [--plain-pairs aa effects wall memory syscall twin both]]
                                          [--json PATH]

The alerts of the example's pairs share one --out folder, as a user's successive alerts do: the base's
instruction counts are taken once and reused (the report's time_spent says so per pair). A full run
(defaults, one repeat) takes about 50 minutes on a 2-core machine: per pair at most 10 for ours (its
9-minute budget counts from the start: build, instruction counts of 69 rows, rounds) and 1-2 for asv;
--own-suite adds about 25 (ours ~10, asv continuous ~6, asv run x2 ~7). The work folder (a temporary one,
removed at the end unless --keep) needs a few GB.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import math
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
sys.path.insert(0, str(ROOT / "evaluation"))

from alert_validation import asv_conf, asv_continuous, calibrate  # noqa: E402

from torchbench.asv_bridge.driver import Asv, Timings, harness_env, install_env  # noqa: E402
from torchbench.project import example  # noqa: E402

# two consecutive commits of this repository whose difference is one test file (tests/test_run_e2e.py)
OWN_BASE, OWN_HEAD = "f44a082df2135eeee8310cf4351e6a7012a41259", "6787c9de0f993e3af3e21263f9e49ccfd44d537f"
TARGET_TYPE, TARGET_OP = "TensorLike", "torch.mul"  # the narrow code path: torch.mul on a TensorLike
SUITE_FILE = "benchmarks/bench_suite.py"
PLAIN_PAIRS = ("aa", "effects", "wall", "memory", "syscall", "twin", "both")  # --plain-pairs, in the order they run
SUITE = '''"""Seven torch ops on three kinds of tensor at three sizes: a suite of 63 small rows."""

import torch

import tensorlib
from torchbench_core.asv_suite import TimerSpec, TimerSuite

MAKERS = {{"Tensor": torch.tensor, "LoggingTensor": tensorlib.LoggingTensor, "TensorLike": tensorlib.TensorLike}}
OPS = {{"torch.add": "torch.add(a, b)", "torch.sub": "torch.sub(a, b)", "torch.mul": "torch.mul(a, b)",
       "torch.neg": "torch.neg(a)", "torch.sum": "torch.sum(a)", "torch.matmul": "torch.matmul(a, b)",
       "torch.cat": "torch.cat([a, b])"}}
SIZES = {{"1 float": 1, "4x4 floats": 4, "16x16 floats": 16}}
# not named SETUP: asv takes a module attribute called setup, in any case, for the module's setup function
MAKE_AB = "a, b = make(torch.ones({{n}}, {{n}}).tolist()), make(torch.full(({{n}}, {{n}}), 2.0).tolist())"


class Suite(TimerSuite):
    min_run_time = {min_run_time!r}
    timers = [
        TimerSpec(stmt, setup=MAKE_AB.format(n=n), globals={{"make": make}}, label=op, sub_label=kind,
                  description=size)
        for op, stmt in OPS.items()
        for kind, make in MAKERS.items()
        for size, n in SIZES.items()
    ]
'''
MUL_ANCHOR = "def mul(input, other):\n"
MUL_LOOP = "    for _ in range({k}):  # injected slowdown of torch.mul on TensorLike\n        pass\n"
# A wall-time-only slowdown of the same path: torch.mul on a TensorLike takes `k` steps through a table of
# `n` entries (a random single cycle, one entry a step). The base of each such pair walks a table of
# TINY_TABLE entries (in L1 cache) with the same k; the head's table is larger, so its steps miss the cache
# (and the TLB): the same instructions whatever the size (valgrind counts them alike), more wall time.
# Sized by calibrate_table (torch.mul's time with a step through each table size, as injected).
TABLE_IMPORT = "import torch\n"
TABLE = '''

def _table(n):  # injected: a random single cycle through n entries (wall-time-only validation)
    import numpy as np
    order = np.random.default_rng(0).permutation(n)
    table = np.empty(n, dtype=np.int64)
    table[order] = np.roll(order, -1)
    return table.tolist()


_TABLE, _AT = _table({n}), [0]
'''
TABLE_STEP = "    _AT[0] = _TABLE[_AT[0]]  # injected: a step through the table\n"
TINY_TABLE = 64
# 32 Ki .. 4 Mi entries (1.3 MB .. 160 MB with the int objects), 1.5x apart: a step's cost rises steeply
# where the table leaves the caches, so the grid is fine there
TABLE_SIZES = sorted({int(2 ** (e / 2)) for e in range(30, 45)})
# Timed where it lands: the example's TensorLike module with the injection, as the head commit would have it,
# executed afresh for each table size; torch.mul(a, b) on two one-element TensorLikes, every size timed in
# each of three passes, the fastest kept (the op's own memory traffic is part of what a step costs)
TIME_TABLE = """
import gc, json, sys, timeit, types
import torch
sources = json.load(open(sys.argv[1]))
best = {}
for _ in range(3):
    for n, source in sources.items():
        module = types.ModuleType("tensor_like_with_table")
        exec(compile(source, "tensor_like.py", "exec"), module.__dict__)
        g = {"torch": torch, "a": module.TensorLike([1.0]), "b": module.TensorLike([2.0])}
        t = min(timeit.repeat("torch.mul(a, b)", globals=g, number=20000, repeat=5)) / 20000
        best[n] = min(t, best.get(n, t))
        del module, g
        gc.collect()
print(json.dumps(best))
"""
TIME_TARGETS = """
import json, sys
sys.path.insert(0, {repo!r})  # the suite, before any other benchmarks/; tensorlib is the install's (PYTHONPATH)
from benchmarks.bench_dispatch import Dispatch
from benchmarks.bench_suite import Suite
out = {{}}
for suite in (Suite, Dispatch):
    for (label, sub_label, description, threads), spec in suite._specs.items():
        title = f"{{sub_label}} · {{description}} ({{label}})"
        if {target!r} in sub_label and {op!r} in label + description:
            out[title] = spec.timer().blocked_autorange(min_run_time=0.5).median
print(json.dumps(out))
"""
DAY0 = 1767700800  # 2026-01-06 12:00 UTC, the example's last commit; the added commits follow a day apart


class StepFailed(Exception):
    pass


@contextlib.contextmanager
def step(what: str):
    """Any failure inside becomes StepFailed naming the step (alert_validation's helpers sys.exit)."""
    try:
        yield
    except StepFailed:
        raise
    except SystemExit as e:
        raise StepFailed(f"{what}: {e.code}") from None
    except Exception as e:  # reported with the step's name, then exit 2
        raise StepFailed(f"{what}: {type(e).__name__}: {e}") from e


def is_target(text: str) -> bool:
    """A row that runs the slowed code path, by its title (ours) or asv's row name."""
    return TARGET_TYPE in text and TARGET_OP in text


def add_commit(repo: git.Repo, parent: str, edits: dict, message: str, day: int) -> str:
    """A commit on `parent` with each file's new text (or function of its old text), at a fixed date."""
    repo.git.checkout("--detach", parent)
    for rel, edit in edits.items():
        path = Path(repo.working_dir) / rel
        path.write_text(edit(path.read_text()) if callable(edit) else edit)
    repo.index.add(list(edits))
    date = f"{DAY0 + 86400 * day} +0000"  # git's raw format: the same hashes on every run
    return repo.index.commit(message, author_date=date, commit_date=date).hexsha


def slow_mul(k: int):
    def edit(text: str) -> str:
        if MUL_ANCHOR not in text:
            raise StepFailed("the example's TensorLike torch.mul handler changed; update MUL_ANCHOR")
        return text.replace(MUL_ANCHOR, MUL_ANCHOR + MUL_LOOP.format(k=k), 1)
    return edit


def walk_table(n: int, k: int):
    """The edit that makes torch.mul on a TensorLike take k steps through a table of n entries."""
    def edit(text: str) -> str:
        if MUL_ANCHOR not in text or TABLE_IMPORT not in text:
            raise StepFailed("the example's TensorLike module changed; update MUL_ANCHOR / TABLE_IMPORT")
        text = text.replace(TABLE_IMPORT, TABLE_IMPORT + TABLE.format(n=n), 1)
        return text.replace(MUL_ANCHOR, MUL_ANCHOR + TABLE_STEP * k, 1)
    return edit


def calibrate_table(python: Path, site: Path, processes: int) -> dict[int, float]:
    """torch.mul's time on a TensorLike with one step through the table, per table size (TINY_TABLE and
    TABLE_SIZES), in the example's module as the injection leaves it; the fastest of `processes` processes."""
    text = (site / "tensorlib" / "tensor_like.py").read_text()
    best: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        sources = Path(tmp) / "sources.json"
        sources.write_text(json.dumps({n: walk_table(n, 1)(text) for n in [TINY_TABLE, *TABLE_SIZES]}))
        for _ in range(processes):
            proc = subprocess.run([str(python), "-c", TIME_TABLE, str(sources)], capture_output=True, text=True,
                                  env=install_env(site), check=False)
            if proc.returncode != 0:
                raise StepFailed(f"timing the table steps failed:\n{proc.stderr[-3000:]}")
            for n, t in json.loads(proc.stdout).items():
                best[int(n)] = min(t, best.get(int(n), math.inf))
    return best


def table_for(extra: float, steps: dict[int, float]) -> tuple[int, int, float]:
    """(table size, steps a call, seconds added a call) closest to adding `extra` seconds a call: the fewest
    steps that can, then the size whose added time is nearest."""
    added = {n: t - steps[TINY_TABLE] for n, t in steps.items() if n != TINY_TABLE}
    k = max(1, math.ceil(extra / max(added.values())))
    n = min(added, key=lambda size: abs(k * added[size] - extra))
    return n, k, k * added[n]


def alert_flags(args) -> list[str]:
    """The alert's defaults, but for the quick-trial overrides given."""
    flags = []
    if args.budget_minutes is not None:
        flags += ["--budget-minutes", str(args.budget_minutes)]
    if args.min_rounds is not None:
        flags += ["--min-rounds", str(args.min_rounds)]
    return flags + (["--no-counts"] if args.no_counts else [])


def run_alert(repo: Path, base: str, head: str, out: Path, envs: Path, flags: list[str],
              logs: Path | None = None) -> tuple[dict, float]:
    """`torchbench alert --out OUT` as a user runs it; (its JSON report, minutes). Its output and report are
    kept in LOGS (default OUT): alert.log, report.json. Pairs that share an OUT share its instruction-count
    cache, as a user's successive alerts do. Rows that failed (exit status 2 with a verdict on the rest) are
    reported, not a failed step."""
    logs = logs or out
    logs.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with open(logs / "alert.log", "w") as log:
        proc = subprocess.run([sys.executable, "-m", "torchbench", "alert", "--repo", str(repo), "--base", base,
                               "--head", head, "--out", str(out), "--env-dir", str(envs),
                               "--json", str(logs / "report.json"), *flags],
                              stdout=log, stderr=subprocess.STDOUT, text=True, cwd=ROOT, check=False)
    minutes = (time.perf_counter() - start) / 60
    for evidence in (out / "alert").glob(f"{base[:8]}*..{head[:8]}*/evidence.json"):  # kept per design
        shutil.copy(evidence, logs / "evidence.json")
    report = json.loads((logs / "report.json").read_text()) if (logs / "report.json").exists() else None
    if proc.returncode not in (0, 1, 2) or report is None or report.get("problems") \
            or (proc.returncode == 2 and not report.get("counts", {}).get("failed")):
        tail = (logs / "alert.log").read_text()[-3000:]
        raise StepFailed(f"torchbench alert {base[:8]}..{head[:8]} exited {proc.returncode} "
                         f"(log: {logs / 'alert.log'}):\n{tail}")
    return report, minutes


def asv_compare(conf: Path, base: str, head: str) -> tuple[dict[str, str], float]:
    """`asv run` of each commit, then `asv compare` (factor 1.1); {row name: its Change mark}, minutes.
    asv run exits 2 when a benchmark failed (its results are saved): compare then skips that row."""
    Asv(conf, Timings()).ensure_machine()
    start = time.perf_counter()
    for sha in (base, head):
        proc = subprocess.run([sys.executable, "-m", "asv", "run", f"{sha}^!", "--config", str(conf)],
                              capture_output=True, text=True, cwd=ROOT, env=harness_env(), check=False)
        if proc.returncode not in (0, 2):
            raise StepFailed(f"asv run {sha[:8]} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n"
                             f"{proc.stderr[-2000:]}")
    marks = asv_marks(conf, base, head)
    return marks, (time.perf_counter() - start) / 60


def run_asv_continuous(conf: Path, base: str, head: str) -> tuple[dict[str, str], float, str]:
    """alert_validation.asv_continuous: {row name: mark}, minutes, and a note. That function stops when asv
    continuous exits 2 (a benchmark failed, as three of this project's own counted rows do); its saved
    results are then read by `asv compare`, which applies the same decision to the same results."""
    start = time.perf_counter()
    try:
        marks, seconds = asv_continuous(conf, base, head)
        return marks, seconds / 60, ""
    except SystemExit as e:
        minutes = (time.perf_counter() - start) / 60
        why = str(e.code).splitlines()[0].rstrip(":")  # "asv continuous failed"
        return asv_marks(conf, base, head), minutes, f"{why}: its saved results read by asv compare"


def asv_marks(conf: Path, base: str, head: str) -> dict[str, str]:
    """`asv compare BASE HEAD` (factor 1.1) of the results under CONF: {row name: its Change mark}."""
    proc = subprocess.run([sys.executable, "-m", "asv", "compare", base, head, "--factor", "1.1", "--config",
                           str(conf)], capture_output=True, text=True, cwd=ROOT, env=harness_env(), check=False)
    marks = compare_marks(proc.stdout)
    if proc.returncode != 0 or not marks:
        raise StepFailed(f"asv compare exited {proc.returncode} with no table:\n{proc.stdout[-3000:]}\n"
                         f"{proc.stderr[-2000:]}")
    return marks


def compare_marks(table: str) -> dict[str, str]:
    """asv compare's printed table (GitHub format) -> {benchmark (parameters): Change mark}, for the rows
    measured by both commits (as alert_validation.asv_continuous counts)."""
    marks = {}
    for line in table.splitlines():
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 5 or cells[0] == "Change" or all(set(c) <= set("-:") for c in cells):
            continue  # the header, its rule
        if {cells[1], cells[2]} & {"failed", "n/a"}:
            continue
        marks[cells[-1]] = cells[0] or " "
    return marks


def calibrate_targets(repo: Path, site: Path, python: Path, processes: int) -> dict[str, float]:
    """Each target row's time (its own statement and setup), the fastest of `processes` fresh processes:
    the alert compares lower quartiles, which sit in the fast cluster (see alert_validation.calibrate)."""
    code = TIME_TARGETS.format(repo=str(repo), target=TARGET_TYPE, op=TARGET_OP)
    best: dict[str, float] = {}
    for _ in range(processes):
        proc = subprocess.run([str(python), "-c", code], capture_output=True, text=True, env=install_env(site),
                              check=False)
        if proc.returncode != 0:
            raise StepFailed(f"timing the target rows failed:\n{proc.stderr[-3000:]}")
        for title, t in json.loads(proc.stdout).items():
            best[title] = min(t, best.get(title, math.inf))
    return best


def build_example(tmp: Path, envs: Path, args) -> tuple[Path, dict, list[tuple[str, str, str, float | None]]]:
    """The example with the suite (B), README edits and injected slowdowns; (repo, calibration, pairs)."""
    with step(f"making the example's commits in {tmp / 'tensorlib'}"):
        path = example.materialize(tmp / "tensorlib")
        repo = git.Repo(path)
        last = repo.head.commit.hexsha
        b = add_commit(repo, last, {SUITE_FILE: SUITE.format(min_run_time=args.min_run_time)},
                       "Add bench_suite: 63 small rows of seven ops, three types, three sizes", 1)
        docs = [b]
        for i in range(args.aa_pairs):
            note = f"\nA note on the docs ({i + 1}).\n"
            docs.append(add_commit(repo, docs[-1], {"README.md": lambda text, note=note: text + note},
                                   f"README: note {i + 1}", 2 + i))
        repo.git.checkout("--detach", b)
    pairs = [(f"A/A {j + 1}: README only", base, head, None) for j, (base, head) in enumerate(itertools.pairwise(docs))]
    print(f"== B {b[:8]}: {SUITE_FILE} added; building the environment and installing B", flush=True)
    warm = tmp / "warm"
    with step("building the environment (a short alert of B's parent against B, bench_dispatch only)"):
        run_alert(path, last, b, warm, envs, ["--budget-minutes", "0.01", "--min-rounds", "2", "--no-counts",
                                              "--no-profile", "-b", "bench_dispatch"])
    with step("calibration"):
        python = next(envs.glob("*/bin/python"))
        site = warm / "installs" / b[:12]  # where the workspace installed B
        t_add, t_iter = calibrate(site, python, processes=args.calibration_processes)
        targets = calibrate_targets(path, site, python, args.calibration_processes)
        if len(targets) != 4:
            raise StepFailed(f"expected 4 target rows, found {sorted(targets)}")
    t_target = statistics.median(targets.values())
    print(f"calibration: one loop iteration {t_iter * 1e9:.1f} ns; TensorLike torch.add {t_add * 1e6:.2f} us; "
          "target rows " + ", ".join(f"{t * 1e6:.2f}" for t in targets.values()) + " us", flush=True)
    calibration = {"iteration_s": t_iter, "tensorlike_add_s": t_add, "targets_s": targets, "loops": {}}
    for p in args.effects:
        k = max(1, round(p * t_target / t_iter))
        with step(f"injecting a +{p:.0%} slowdown"):
            sha = add_commit(repo, b, {"tensorlib/tensor_like.py": slow_mul(k)},
                             f"TensorLike: slow torch.mul by {p:.0%} ({k} loop iterations)", 30)
        expected = {title: k * t_iter / t for title, t in targets.items()}
        calibration["loops"][f"+{p:.0%}"] = {"k": k, "sha": sha, "expected": expected}
        print(f"  +{p:.0%}: {k} iterations, expected " + ", ".join(f"+{e:.1%}" for e in expected.values()), flush=True)
        pairs.append((f"+{p:.0%}", b, sha, p))
    if args.wall_effects:
        with step("calibration of the table steps (wall-time-only slowdowns)"):
            steps = calibrate_table(python, site, args.calibration_processes)
        print("  TensorLike torch.mul with a step through a table of n: " +
              ", ".join(f"{n}: {t * 1e6:.3f} us" for n, t in steps.items()), flush=True)
        calibration["table_steps_s"] = steps
    for p in args.wall_effects:
        n, k, extra = table_for(p * t_target, steps)
        with step(f"injecting a +{p:.0%} wall-time-only slowdown"):
            base = add_commit(repo, b, {"tensorlib/tensor_like.py": walk_table(TINY_TABLE, k)},
                              f"TensorLike: torch.mul takes {k} step(s) through a table of {TINY_TABLE}", 31)
            sha = add_commit(repo, b, {"tensorlib/tensor_like.py": walk_table(n, k)},
                             f"TensorLike: torch.mul takes {k} step(s) through a table of {n}", 32)
        expected = {title: extra / t for title, t in targets.items()}
        kind = f"wall +{p:.0%}"
        calibration["loops"][kind] = {"n": n, "k": k, "sha": sha, "base": base, "expected": expected}
        print(f"  {kind}: {k} step(s) through {n} entries (+{extra * 1e9:.0f} ns a call; base {TINY_TABLE}), "
              "expected " + ", ".join(f"+{e:.1%}" for e in expected.values()), flush=True)
        pairs.append((kind, base, sha, p))
    repo.git.checkout("--detach", b)  # asv reads the suite from the working tree
    return path, calibration, pairs


DESIGN_KEYS = {"auto": "ours", "alternating": "ours alternating", "duet": "ours duet"}  # a record's key for our
# alert in each design ("auto", the alert's default, chooses one from its first rounds: ab/design_choice.py)
TOOLS = (*DESIGN_KEYS.values(), "asv_continuous", "asv_compare")


def rotated(designs: list[str], repeat: int) -> tuple[str, ...]:
    """The designs in the order repeat `repeat` runs them: each repeat starts one later, so that over as many
    repeats as designs each runs first, second, ... once (a day's drift falls on every design alike)."""
    k = repeat % len(designs)
    return tuple(designs[k:] + designs[:k])


def measure_pair(kind: str, name: str, repo: Path, base: str, head: str, work: Path, envs: Path,
                 flags: list[str], targeted: bool, ours: Path, asv_compare_too: bool = True,
                 target=is_target, asv_continuous_too: bool = True,
                 designs: tuple[str, ...] = ("auto",)) -> dict:
    """Ours in each of `designs` (its --out OURS, shared by the pairs of one repository), asv continuous and
    asv compare on one pair; what each flagged and how long it took. `targeted`: the head slows the target
    rows (else every row is identical code), those for which target(row title or asv name) is true;
    ASV_COMPARE_TOO: also `asv run` + `asv compare` (a quick trial may leave it out)."""
    target = target if targeted else (lambda _: False)
    record = {"kind": kind, "pair": name, "base": base, "head": head}
    for design in designs:
        logs = work / ("ours" if design == "auto" else f"ours-{design}")
        with step(f"{kind}: torchbench alert --design {design} {base[:8]}..{head[:8]} in {ours} (log in {logs})"):
            report, minutes = run_alert(repo, base, head, ours, envs, [*flags, "--design", design], logs=logs)
        record[DESIGN_KEYS[design]] = _ours_record(report, minutes, target)
    conf = ours / "asv.conf.json"
    if asv_continuous_too:
        with step(f"{kind}: asv continuous {base[:8]} {head[:8]} in {work / 'asv-continuous'}"):
            marks, minutes, note = run_asv_continuous(asv_conf(conf, work / "asv-continuous"), base, head)
        record["asv_continuous"] = _asv_record(marks, minutes, target) | {"note": note}
    if asv_compare_too:
        with step(f"{kind}: asv run + asv compare {base[:8]} {head[:8]} in {work / 'asv-compare'}"):
            marks, minutes = asv_compare(asv_conf(conf, work / "asv-compare"), base, head)
        record["asv_compare"] = _asv_record(marks, minutes, target)
    return record


def _ours_record(report: dict, minutes: float, target) -> dict:
    rows = report["rows"]
    flagged = [r["title"] for r in rows if r["status"] in ("regressed", "improved")]
    failed = {r["title"]: r.get("error", "") for r in rows if r["status"] == "failed"}
    rows = [r for r in rows if r["status"] != "failed"]
    time_spent = report.get("time_spent") or {}
    return {
        "exit_status": report.get("exit_status"), "minutes": minutes, "rounds": report.get("rounds"),
        "time_spent": time_spent, "schedule": time_spent.get("schedule"),
        "rows": len(rows), "counts": report.get("counts"), "flagged": flagged, "failed": failed,
        "false": [t for t in flagged if not target(t)],
        "mde": {r["title"]: (r["comparison"] or {}).get("mde") for r in rows},
        # the MDE read from the relabellings alone, where the machine's slow processes raised it (else nan)
        "relabelled_mde": {r["title"]: (r["comparison"] or {}).get("relabelled_mde") for r in rows},
        "status": {r["title"]: r["status"] for r in rows},
        "targets": [{"title": r["title"], "status": r["status"], "label": r.get("label"),
                     "decided_by": r.get("decided_by"), "ratio": (r["comparison"] or {}).get("ratio"),
                     "counts_delta": r.get("counts_delta"), "mde": (r["comparison"] or {}).get("mde")}
                    for r in rows if target(r["title"])]}


def _asv_record(marks: dict[str, str], minutes: float, target) -> dict:
    flagged = [n for n, m in marks.items() if m in ("+", "-")]  # asv's worse / better
    return {"minutes": minutes, "rows": len(marks), "flagged": flagged, "false": [n for n in flagged if not target(n)],
            "targets": [{"name": n, "mark": m} for n, m in marks.items() if target(n)]}


def _progress(record: dict) -> str:
    lines = []
    for key in DESIGN_KEYS.values():
        o = record.get(key)
        if o is None:
            continue
        targets = ", ".join(f"{t['status']} {t['ratio']:.3f}" if t["ratio"] else t["status"] for t in o["targets"])
        phases = (o.get("time_spent") or {}).get("phases", {})
        counts = f", counts {phases['instruction counts'] / 60:.1f} min" if "instruction counts" in phases else ""
        line = (f"  {record['kind']:14} {key}: {len(o['flagged'])}/{o['rows']} flagged ({o['rounds']} rounds "
                f"{o.get('schedule') or ''}, {o['minutes']:.1f} min{counts})")
        if o["targets"]:
            line += f"; targets: {targets}"
        for title, error in o["failed"].items():  # the alert's verdict on the other rows stands
            line += f"\n    {key}: {title} failed, not counted: {' '.join(error.split())[:300]}"
        lines.append(line)
    line = ""
    for tool in ("asv_continuous", "asv_compare"):
        if tool in record:
            a = record[tool]
            line += f" | {tool.replace('_', ' ')}: {len(a['flagged'])}/{a['rows']} flagged, {a['minutes']:.1f} min"
            if a.get("note"):
                line += f" ({a['note']})"
    if line:
        lines.append(f"  {record['kind']:14}{line}")
    return "\n".join(lines)


def summarize(records: list[dict]) -> list[dict]:
    """Per pair kind: false alerts per row, target rows found, minutes, MDE per row."""
    out = []
    for kind in dict.fromkeys(r["kind"] for r in records):
        group = [r for r in records if r["kind"] == kind]
        row = {"kind": kind, "runs": len(group)}
        for tool in TOOLS:
            runs = [r[tool] for r in group if tool in r]
            if not runs:
                continue
            ours = tool in DESIGN_KEYS.values()
            targets = [t for run in runs for t in run["targets"]]
            found = sum(t["status"] == "regressed" if ours else t["mark"] == "+" for t in targets)
            row[tool] = {"false_alerts": sum(len(run["false"]) for run in runs),
                         "other_rows": sum(run["rows"] for run in runs) - len(targets),
                         "targets_found": found, "targets": len(targets),
                         "minutes": statistics.median(run["minutes"] for run in runs)}
            if ours:
                mdes = finite(m for run in runs for m in run["mde"].values())
                row[tool]["mde"] = ({"median": statistics.median(mdes), "min": min(mdes), "max": max(mdes)}
                                    if mdes else None)
                rates = [(run["time_spent"] or {}).get("rounds_per_minute") for run in runs]
                rates = [r for r in rates if r]
                row[tool]["rounds_per_minute"] = statistics.median(rates) if rates else None
                row[tool]["failed_rows"] = sum(len(run["failed"]) for run in runs)
        out.append(row)
    return out


def print_summary(summary: list[dict]) -> None:
    tools = [t for t in TOOLS if any(t in row for row in summary)]
    ours = [t for t in tools if t in DESIGN_KEYS.values()]
    names = " / ".join(t.replace("_", " ") for t in tools)
    print(f"\n== false alerts per row, target rows found, minutes per verdict ({names}); MDE per row and rounds "
          f"a minute ({' / '.join(ours)})")
    print(f"  {'pairs':14} {'runs':>4}  {'false alerts / rows':>32}  {'target rows found':>20}  "
          f"{'minutes per verdict':>19}  {'MDE median [range]':>22}  {'rounds a minute':>15}")

    def cell(row, tool, text):
        return text(row[tool]) if tool in row else "-"
    for row in summary:
        false = " / ".join(cell(row, t, lambda s: f"{s['false_alerts']}/{s['other_rows']}") for t in tools)
        found = " / ".join(cell(row, t, lambda s: f"{s['targets_found']}/{s['targets']}") for t in tools) \
            if row[ours[0]]["targets"] else "-"
        minutes = " / ".join(cell(row, t, lambda s: f"{s['minutes']:.1f}") for t in tools)
        mde = " / ".join(cell(row, t, lambda s: f"{s['mde']['median']:.1%} [{s['mde']['min']:.1%}-"
                                                f"{s['mde']['max']:.1%}]" if s["mde"] else "-") for t in ours)
        rate = " / ".join(cell(row, t, lambda s: f"{s['rounds_per_minute']:.1f}" if s["rounds_per_minute"]
                               else "-") for t in ours)
        print(f"  {row['kind']:14} {row['runs']:>4}  {false:>32}  {found:>20}  {minutes:>19}  {mde:>22}  {rate:>15}")
    for row in summary:
        for t in ours:
            if t in row and row[t]["failed_rows"]:
                print(f"  ({row['kind']}, {t}: {row[t]['failed_rows']} row(s) failed and are not counted)")


def print_targets(records: list[dict], calibration: dict) -> None:
    """Each target row of each slowdown, per design of ours: found / runs, the measured ratios and counts
    changes (median of runs), the expected change, the labels."""
    effects = [r for r in records if any(r.get(key, {}).get("targets") for key in DESIGN_KEYS.values())]
    if not effects:
        return
    print("\n== target rows: found / runs, measured ratio and counts change (median of runs), expected by "
          "calibration, label")
    median = lambda xs, fmt: fmt.format(statistics.median(xs)) if xs else "-"  # noqa: E731
    for kind in dict.fromkeys(r["kind"] for r in effects):
        expected = calibration["loops"][kind]["expected"]
        for key in DESIGN_KEYS.values():
            by_title: dict[str, list[dict]] = {}
            for r in effects:
                if r["kind"] == kind and key in r:
                    for t in r[key]["targets"]:
                        by_title.setdefault(t["title"], []).append(t)
            for title, runs in by_title.items():
                ratio = median([t["ratio"] for t in runs if t["ratio"] is not None], "{:.3f}")
                counts = median([t["counts_delta"] for t in runs if t["counts_delta"] is not None], "{:+.2%}")
                found = sum(t["status"] == "regressed" for t in runs)
                labels = ", ".join(sorted({t["label"] or t["status"] for t in runs}))
                print(f"  {kind:8} {key:9} {title:60} {found}/{len(runs)}  {ratio:>6}  {counts:>7}  "
                      f"{1 + expected.get(title, math.nan):6.3f}  {labels}")


def plain_suite_records(tmp: Path, envs: Path, args, flags: list[str]) -> tuple[list[dict], dict]:
    """Issue 27's validation: a plain asv suite of 42 rows (plain_suite_counts.py: time_ methods with setup
    and params, no torchbench_core import), A/A, lone compute changes of `work` (--plain-effects), a lone
    wall-time-only change of index(1000) (page faults), and the twin suite (the same 42 operations as
    TimerSuite rows) A/A; ours beside asv continuous (and asv compare unless --no-asv-compare)."""
    import plain_suite_counts as plain

    path = tmp / "plainlib"
    path.mkdir()
    with step(f"making the plain suite's commits in {path}"):
        commits = plain.make_validation_repo(path, args.plain_effects, args.wall_effect)
    print(f"== plain suite: {commits['wall_pages']} page fault(s) for +{args.wall_effect:.0%} of index(1000)",
          flush=True)
    with step("building the environment (a short alert of the plain suite's A/A pair)"):
        run_alert(path, commits["base"], commits["docs"], tmp / "plain-warm", envs,
                  ["--budget-minutes", "0.01", "--min-rounds", "2", "--no-counts", "--no-profile"])
    computed = lambda title: plain.TARGET in title  # noqa: E731 - the three rows of `work`
    walled = lambda title: plain.WALL_TARGET in title  # noqa: E731
    chosen = {  # --plain-pairs: (kind, name, base, head, targeted, target) of each
        "aa": [("plain A/A", "plain: README only", "base", "docs", False, computed)],
        "effects": [(f"plain {e}", f"plain: work {e} compute", "base", e, True, computed)
                    for e in commits if e.startswith("+")],
        "wall": [("plain wall-only", f"plain: index(1000) +{args.wall_effect:.0%} wall time", "base", "wall",
                  True, walled)],
        "memory": [("plain memory-only", f"plain: lookup's table {plain.MEMORY_SIZES[0]} -> {plain.MEMORY_SIZES[1]} "
                    "entries", "memory base", "memory", True, lambda title: plain.MEMORY_TARGET in title)],
        "syscall": [("plain syscall", "plain: joined + getpid a call", "base", "syscall", True,
                     lambda title: plain.SYSCALL_TARGET in title)],
        "twin": [("twin A/A", "twin (TimerSuite): README only", "twin", "twin docs", False, computed)],
        "both": [("both A/A", "plain and twin in the same processes: README only", "both", "both docs", False,
                  computed)]}
    pairs = [pair for key in PLAIN_PAIRS if key in args.plain_pairs for pair in chosen[key]]
    records = []
    repo = git.Repo(path)
    for rep in range(args.repeats):
        for i, (kind, name, base, head, targeted, target) in enumerate(pairs):
            print(f"== repeat {rep + 1}/{args.repeats}, {name}: {commits[base][:8]}..{commits[head][:8]}", flush=True)
            repo.git.checkout("--detach", commits[base])  # asv and ours read the suite from the working tree
            records.append(measure_pair(kind, name, path, commits[base], commits[head], tmp / f"plain-r{rep}-p{i}",
                                        envs, flags, targeted=targeted, target=target,
                                        ours=tmp / ("twin-ours" if kind.startswith("twin") else "plain-ours"),
                                        asv_compare_too=not (args.no_asv_compare or args.no_asv),
                                        asv_continuous_too=not args.no_asv,
                                        designs=rotated(args.designs, rep)))
            print(_progress(records[-1]), flush=True)
    return records, commits


def finite(values) -> list[float]:
    """The finite MDEs among `values` (None or inf: a row whose rounds could not reach its bar)."""
    return [v for v in values if v is not None and math.isfinite(v)]


def finite_median(values) -> float | None:
    """The median of the finite MDEs among `values`; None where there are none (too few processes)."""
    kept = finite(values)
    return statistics.median(kept) if kept else None


def print_mde_medians(title: str, m: dict) -> None:
    """One line: the plain and twin median MDEs ({"plain": x, "twin": y}; None where no row had a finite one:
    too few processes) and their ratio against issue 27's goal."""
    ratio = f"{m['plain'] / m['twin']:.2f}x" if m["plain"] and m["twin"] else "-"
    shown = {k: "-" if v is None else f"{v:.1%}" for k, v in m.items()}
    print(f"  {title}: plain {shown['plain']}, twin {shown['twin']}: {ratio} (goal <= 1.2x)")


def print_same_processes(runs: list[dict], twin_key) -> dict:
    """Each plain row beside its twin row timed in the same processes (the "both" suite, A/A): the two
    suites' A/A runs above each stop at their own look, and a row decided early states the MDE its suite's
    slow processes hold it to (stats.power_ceiling), a figure of that run's machine, not of the row's timing.
    Here both rows of an operation share every process: their MDEs as stated, and as read from the
    relabellings alone (before the slow processes' hold), compared row by row."""
    rows = []
    for run in runs:
        ours = run["ours"]
        by_key: dict = {}
        for title, mde in ours["mde"].items():
            key = twin_key(title)
            if key is None:
                continue
            relabelled = ours.get("relabelled_mde", {}).get(title)
            unheld = relabelled if relabelled is not None and math.isfinite(relabelled) else mde
            by_key.setdefault(key, {})["twin" if "time_" not in title else "plain"] = (
                mde, unheld, ours["status"][title])
        rows += [v for v in by_key.values() if "plain" in v and "twin" in v]
    def median(which: str, i: int) -> float | None:
        return finite_median(r[which][i] for r in rows)
    out = {"operations": len(rows), "runs": len(runs),
           "mde_median": {"plain": median("plain", 0), "twin": median("twin", 0)},
           "relabelled_mde_median": {"plain": median("plain", 1), "twin": median("twin", 1)},
           "inconclusive_plain_decided_twin": sum(r["plain"][2] == "inconclusive" and r["twin"][2] != "inconclusive"
                                                  for r in rows),
           "rounds": [run["ours"]["rounds"] for run in runs]}
    print(f"\n== the same {len(rows)} operations as plain and twin rows in the same processes (both A/A, "
          f"{out['rounds']} rounds)")
    for name, key in (("as stated", "mde_median"), ("from the relabellings alone", "relabelled_mde_median")):
        print_mde_medians(f"median MDE {name}", out[key])
    print(f"  plain rows inconclusive whose twin decided: {out['inconclusive_plain_decided_twin']}")
    return out


def print_plain(records: list[dict], twin_key) -> dict:
    """The plain suite against its twin (A/A): rows left inconclusive that the twin decided, and the MDEs;
    every target's channel and label; the counts phase's minutes."""
    def ours(record: dict) -> dict:  # the alert's record: auto's, else the first design run (--designs)
        return record.get("ours") or next(record[k] for k in DESIGN_KEYS.values() if k in record)

    def by_op(kind: str, field: str) -> dict:
        return {twin_key(t): v for r in records if r["kind"] == kind for t, v in ours(r)[field].items()}
    status, twin_status = by_op("plain A/A", "status"), by_op("twin A/A", "status")
    mde, twin_mde = by_op("plain A/A", "mde"), by_op("twin A/A", "mde")
    undecided = sorted(str(k) for k, v in status.items() if v == "inconclusive"
                       and twin_status.get(k) not in (None, "inconclusive"))
    out = {"inconclusive_plain_decided_twin": undecided,
           "inconclusive": {"plain": sum(v == "inconclusive" for v in status.values()),
                            "twin": sum(v == "inconclusive" for v in twin_status.values())},
           "mde_median": {"plain": finite_median(mde.values()), "twin": finite_median(twin_mde.values())}}
    print("\n== the plain asv suite beside its twin (the same 42 operations as TimerSuite rows), A/A")
    print(f"  inconclusive rows: plain {out['inconclusive']['plain']}, twin {out['inconclusive']['twin']}; "
          f"plain rows inconclusive whose twin decided: {len(undecided)} {undecided[:6]}")
    print_mde_medians("median MDE", out["mde_median"])
    same = [r for r in records if r["kind"] == "both A/A"]
    if same:
        out["same_processes"] = print_same_processes(same, twin_key)
    print("\n== target rows (ours): status, decided by, label, counts change, wall-time ratio")
    for r in records:
        for t in ours(r)["targets"]:
            delta = f"{t['counts_delta']:+.2%}" if t["counts_delta"] is not None else "-"
            ratio = f"{t['ratio']:.3f}" if t["ratio"] else "-"
            print(f"  {r['kind']:16} {t['title']:48} {t['status']:12} {t['decided_by'] or '-':18} "
                  f"{(t['label'] or '-')[:42]:42} {delta:>8} {ratio:>6}")
    print("\n== the counts phase, minutes (both sides at once, one valgrind process a side)")
    for r in records:
        phases = (ours(r).get("time_spent") or {}).get("phases", {})
        tally = (ours(r).get("time_spent") or {}).get("instruction_counts", {})
        print(f"  {r['kind']:16} {phases.get('instruction counts', 0) / 60:.2f} min  {json.dumps(tally)}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1, help="runs of every pair (default 1)")
    parser.add_argument("--aa-pairs", type=int, default=2, help="A/A pairs of README edits (default 2)")
    parser.add_argument("--effects", type=float, nargs="*", default=[0.05, 0.10],
                        help="slowdowns of the targets, as fractions (default 0.05 0.10)")
    parser.add_argument("--wall-effects", type=float, nargs="*", default=[0.05, 0.10],
                        help="wall-time-only slowdowns of the targets (cache misses: the same instructions), as "
                             "fractions (default 0.05 0.10)")
    parser.add_argument("--designs", nargs="+", choices=list(DESIGN_KEYS), default=["auto"],
                        help="our alert's designs, each run on every pair (default auto, the alert's)")
    parser.add_argument("--own-suite", action="store_true", help="also an A/A of this project's own suite")
    parser.add_argument("--own-base", default=OWN_BASE, help="its base commit (default f44a082)")
    parser.add_argument("--own-head", default=OWN_HEAD, help="its head commit (default 6787c9d: tests only)")
    parser.add_argument("--plain-suite", action="store_true",
                        help="a plain asv suite (time_ methods, 42 rows) and its TimerSuite twin, instead of the example")
    parser.add_argument("--plain-pairs", nargs="+", choices=PLAIN_PAIRS, default=list(PLAIN_PAIRS),
                        help="--plain-suite: which pairs (default all: A/A, the compute effects, the wall-time-only "
                             "change, the memory-only change, the system call added, the twin's A/A, and both suites in the same processes, A/A)")
    parser.add_argument("--plain-effects", type=float, nargs="*", default=[0.02, 0.05],
                        help="--plain-suite: compute changes of one function (default 0.02 0.05)")
    parser.add_argument("--wall-effect", type=float, default=0.05,
                        help="--plain-suite: the wall-time-only change of one row (default 0.05)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the summary and every run here")
    trial = parser.add_argument_group("quick trials only (the validation uses the alert's defaults)")
    trial.add_argument("--budget-minutes", type=float, help="the alert's (default: its own, 9)")
    trial.add_argument("--min-rounds", type=int, help="the alert's (default: its own, 6)")
    trial.add_argument("--no-counts", action="store_true", help="the alert without instruction counts")
    trial.add_argument("--min-run-time", type=float, default=0.1, help="each suite row's, per process (0.1 s)")
    trial.add_argument("--calibration-processes", type=int, default=7, help="fresh processes (default 7)")
    trial.add_argument("--no-asv-compare", action="store_true",
                       help="leave out the asv run + asv compare anchor (asv continuous stays)")
    trial.add_argument("--no-asv", action="store_true", help="--plain-suite: leave out asv's commands too")
    trial.add_argument("--keep", action="store_true", help="keep the work folder (its path is printed)")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="suite-validation-"))
    print(f"== work folder {tmp}", flush=True)
    flags = alert_flags(args)
    try:
        envs = tmp / "envs"
        if args.plain_suite:
            import plain_suite_counts

            records, commits = plain_suite_records(tmp, envs, args, flags)
            summary = summarize(records)
            document = {"settings": vars(args) | {"json": str(args.json)}, "alert_flags": flags, "commits": commits,
                        "summary": summary, "runs": records}
            if args.json:  # every run kept before anything is printed from it
                args.json.write_text(json.dumps(document, indent=1, default=str))
            print_summary(summary)
            document["twins"] = print_plain(records, plain_suite_counts.twin_key)
            if args.json:
                args.json.write_text(json.dumps(document, indent=1, default=str))
            return
        path, calibration, pairs = build_example(tmp, envs, args)
        records = []
        for rep in range(args.repeats):
            for i, (name, base, head, effect) in enumerate(pairs):
                kind = "A/A" if effect is None else name
                print(f"== repeat {rep + 1}/{args.repeats}, {name}: {base[:8]}..{head[:8]}", flush=True)
                records.append(measure_pair(kind, name, path, base, head, tmp / f"r{rep}-p{i}", envs, flags,
                                            targeted=effect is not None, ours=tmp / "ours",
                                            asv_compare_too=not args.no_asv_compare,
                                            designs=rotated(args.designs, rep)))
                print(_progress(records[-1]), flush=True)
        if args.own_suite:
            for rep in range(args.repeats):
                print(f"== repeat {rep + 1}/{args.repeats}, own suite A/A: {args.own_base[:8]}..{args.own_head[:8]}",
                      flush=True)
                records.append(measure_pair("own-suite A/A", "own suite: tests only", ROOT, args.own_base,
                                            args.own_head, tmp / f"own-r{rep}", tmp / "own-envs", flags,
                                            targeted=False, ours=tmp / "own-ours",
                                            asv_compare_too=not args.no_asv_compare,
                                            designs=rotated(args.designs, rep)))
                print(_progress(records[-1]), flush=True)
        summary = summarize(records)
        print_summary(summary)
        print_targets(records, calibration)
        if args.json:
            args.json.write_text(json.dumps({"settings": vars(args) | {"json": str(args.json)},
                                             "alert_flags": flags, "calibration": calibration,
                                             "summary": summary, "runs": records}, indent=1, default=str))
    except StepFailed as e:
        print(f"\nFAILED: {e}", file=sys.stderr, flush=True)
        print(f"(work folder {tmp}{' kept' if args.keep else ''})", file=sys.stderr)
        sys.exit(2)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
