"""Validation of change points and `torchbench find` on this machine, beside asv's own detection (issue 10).

1. Per-process values, measured here: `torchbench alert` on two commits of the
   example that change nothing measured gives ~20 fresh processes a side for
   each of its six dispatch benchmarks: the machine's real process-to-process
   noise (fast and slow groups included). --evidence reuses such values, or
   the larger pool of evaluation/alert_power.py (70 rounds: 140 processes a
   benchmark).
2. Synthetic histories of 30 commits built from those values, each commit K
   processes (--processes: 1, 2 and run's default --rounds), their blocks
   pooled as asv pools a benchmark's rounds: 100 A/A series per benchmark
   mix, and steps of 5%, 10% and 30% injected at a random commit (50 series
   each).
   * ours: changepoints.detect on the commits' levels (stats.level), then the
     confirmation replayed: the alert's own decision (stats.compare, classify,
     the alert's default policy) on fresh per-process values for the two
     commits around the step, as many a side as `torchbench find` measures at
     its default budget;
   * asv: step_detect.detect_steps on the commits' medians (asv's value) with
     asv's weights (2 / the 99% interval's width, as asv.graph gets them) and
     detect_regressions at asv's default threshold (5%), which is what its
     regressions page and feed publish.
3. The example history, measured here with `torchbench run` (its default
   --rounds): its steps (ours: the planted slowdown and its fix; asv's
   beside), then `torchbench find` confirming them and naming the culprit, in
   minutes.
4. An A/A history measured here: the example's last commit and 20 commits of
   docs on top, each measured by `torchbench run` (default --rounds): our
   steps and asv's; ours are then confirmed or refuted by `find`.

    python evaluation/changepoint_validation.py [--evidence FILE ...] [--processes K ...] [--skip-histories]
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

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from asv import step_detect  # noqa: E402

from torchbench import stats  # noqa: E402
from torchbench.ab.options import Policy  # noqa: E402
from torchbench.asv_bridge import results  # noqa: E402
from torchbench.history import changepoints, find, run, step_record as steprecord  # noqa: E402
from torchbench.project import commits, example  # noqa: E402

N_COMMITS = 30
CONFIRM_PROCESSES = 20  # a side: what find's confirmation gets in its default 3 minutes here (7-8 s a round)
ASV_THRESHOLD = 0.05  # asv's default regressions_thresholds
POLICY = Policy()


def tb(*args: str, timeout: float = 3600) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "torchbench", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout)
    if proc.returncode not in (0, 1):
        sys.exit(f"torchbench {args[0]} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    return proc


# -- 1. the machine's per-process noise ------------------------------------------------------------------

def measure_pools(tmp: Path) -> list[np.ndarray]:
    out = tmp / "pools"
    repo = example.materialize(tmp / "pool-repo")
    shas = [c.hexsha for c in reversed(list(__import__("git").Repo(repo).iter_commits("HEAD")))]
    print("== measuring per-process values: alert on the example's docs-only commit, 20+ processes a side",
          flush=True)
    tb("alert", "--repo", repo, "--base", shas[0], "--head", shas[1], "--out", out, "--no-counts", "--no-profile",
       "--min-rounds", "20", "--max-rounds", "24", "--budget-minutes", "6")
    return load_pools(list(out.glob("alert/*/evidence.json")))


def load_pools(paths: list[Path]) -> list[np.ndarray]:
    """Per-process values of identical code, one pool per benchmark, each scaled to its median: from alert
    evidence.json files, or from a pool of evaluation/alert_power.py (its two identical arms)."""
    pools = []
    for path in paths:
        doc = json.loads(Path(path).read_text())
        if "rounds" in doc and "jobs" in doc:  # evaluation/alert_power.py
            for key in doc["jobs"]:
                both = np.asarray([r["arms"][a]["values"][key] for r in doc["rounds"] for a in ("c5", "c6")
                                   if key in r["arms"][a]["values"]], dtype=float)
                pools.append(both / np.median(both))
            continue
        values = doc["values"]
        for job in values["base"]:
            both = np.asarray(values["base"][job] + values["head"].get(job, []), dtype=float)
            if len(both) >= 10:
                pools.append(both / np.median(both))
    if not pools:
        sys.exit("no per-process values found")
    return pools


# -- 2. synthetic histories --------------------------------------------------------------------------------

BLOCKS = 20  # blocks a process gives a benchmark (blocked_autorange at min_run_time 0.2 s: 20-40 here)
BLOCK_SD = 0.004  # their spread inside one process, on the log scale (+-1% at 99%, as measured here)


def _commits(pool: np.ndarray, levels: np.ndarray, processes: int, rng) -> list[stats.Interval]:
    """Each commit as `torchbench run --rounds K` records it: K real per-process values, each process's
    blocks around its value, pooled into one sample list (asv keeps no process boundaries)."""
    out = []
    for lv in levels:
        procs = rng.choice(pool, processes) * lv
        out.append(stats.interval(np.concatenate([p * np.exp(rng.normal(0, BLOCK_SD, BLOCKS)) for p in procs])))
    return out


def _asv_regressions(v: np.ndarray, iv: list[stats.Interval]) -> list[int]:
    """asv's published regressions (positions of the first commit after each upward jump)."""
    w = [2 / (i.high - i.low) for i in iv]
    steps = step_detect.detect_steps(list(v), w)
    _, _, jumps = step_detect.detect_regressions(steps, ASV_THRESHOLD)
    return [after for _, after, _, _ in jumps or []]


def _confirm(pool: np.ndarray, rng, before: float, after: float, direction: int) -> bool:
    """The alert's verdict on fresh processes of the two commits around a candidate."""
    a = rng.choice(pool, CONFIRM_PROCESSES) * before
    b = rng.choice(pool, CONFIRM_PROCESSES) * after
    c = stats.compare(a, b, resamples=4000)
    verdict = stats.classify(c, c.p_value <= POLICY.fdr, floor=POLICY.floor, threshold=POLICY.threshold)
    return verdict == (stats.REGRESSED if direction > 0 else stats.IMPROVED)


def synthetic(pools: list[np.ndarray], processes: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    print(f"\n== synthetic histories: {N_COMMITS} commits of {processes} real per-process value(s) each "
          f"({len(pools)} benchmark pools, {sum(map(len, pools))} processes); confirmation replayed with "
          f"{CONFIRM_PROCESSES} processes a side")
    print(f"  {'series':22} {'ours: candidates':>17} {'ours: confirmed':>16} {'asv regressions':>16}")
    for effect, count in ((0.0, 100), (0.05, 50), (0.10, 50), (0.30, 50)):
        cand = conf = asv = 0
        wrong_cand = wrong_conf = wrong_asv = 0
        for _ in range(count):
            pool = pools[rng.integers(len(pools))]
            at = int(rng.integers(5, N_COMMITS - 4))
            level = np.where(np.arange(N_COMMITS) >= at, 1 + effect, 1.0) if effect else np.ones(N_COMMITS)
            iv = _commits(pool, level, processes, rng)
            found = changepoints.detect([i.level for i in iv], iv)
            confirmed = [s for s in found if _confirm(pool, rng, level[s.at - 1], level[s.at],
                                                      1 if s.ratio > 1 else -1)]
            jumps = _asv_regressions(np.array([i.median for i in iv]), iv)  # asv's value: the median
            hit = (lambda i: effect and i == at)
            cand += any(hit(s.at) and s.ratio > 1 for s in found)
            conf += any(hit(s.at) and s.ratio > 1 for s in confirmed)
            asv += any(hit(j) for j in jumps)
            wrong_cand += sum(not hit(s.at) for s in found)
            wrong_conf += sum(not hit(s.at) for s in confirmed)
            wrong_asv += sum(not hit(j) for j in jumps)
        name = "A/A" if not effect else f"+{effect:.0%} step"
        if effect:
            print(f"  {name + ' found':22} {cand / count:17.0%} {conf / count:16.0%} {asv / count:16.0%}")
        per100 = 100 / count
        print(f"  {name + ' false /100':22} {wrong_cand * per100:17.1f} {wrong_conf * per100:16.1f} "
              f"{wrong_asv * per100:16.1f}", flush=True)
    print("  found: at its exact commit; false: any other step (one found a commit off counts as false)")
    print("  goals: >= 90% of +10% steps found; <= 1 false step per 100 series")


# -- 3 and 4. measured histories ---------------------------------------------------------------------------

def _detect_both(out: Path, repo_path: Path) -> tuple[list[changepoints.Found], list[tuple[str, str]]]:
    repo = commits.open_repo(repo_path)
    order = find._branch_order(repo, "HEAD")
    warnings: list[str] = []
    hs = changepoints.histories(results.iter_rows(out / "results", warnings), order)
    ours = changepoints.find_steps(hs)
    theirs = []
    for h in hs:
        for after in _asv_regressions(np.asarray(h.values), h.intervals):
            theirs.append((h.name, h.commits[after]))
    return ours, theirs


def _show(ours, theirs, subjects: dict[str, str]) -> None:
    print(f"  ours: {len(ours)} step(s)")
    for f in ours:
        print(f"    {f.step.ratio:6.3f}x at {f.after[:8]} {subjects.get(f.after, '')[:40]:40} {f.history.name[-60:]}")
    print(f"  asv:  {len(theirs)} regression(s)")
    for name, after in theirs:
        print(f"    at {after[:8]} {subjects.get(after, '')[:40]:40} {name[-60:]}")


def example_history(tmp: Path) -> None:
    out = tmp / "example"
    print("\n== the example history (6 commits), measured: torchbench run", flush=True)
    tb("run", "--example", "--out", out, "--no-publish")
    repo_path = example.default_subject(out)
    repo = commits.open_repo(repo_path)
    subjects = {c.hexsha: c.summary for c in repo.iter_commits("HEAD")}
    ours, theirs = _detect_both(out, repo_path)
    _show(ours, theirs, subjects)
    start = time.perf_counter()
    proc = tb("find", "--example", "--out", out)
    minutes = (time.perf_counter() - start) / 60
    record = json.loads((out / steprecord.RECORD).read_text())
    print(f"  torchbench find: {minutes:.1f} min")
    for s in record["steps"]:
        c = s.get("culprit") or {}
        print(f"    {s['status']:12} {s['ratio']:6.3f}x {s['after'][:8]} {s['name'][-50:]}"
              + (f"  culprit {c['culprit'][:8]} {c.get('subject', '')[:40]}" if c.get("culprit") else ""))
    planted = "00d31233"
    hits = [s for s in record["steps"] if s["status"] == "confirmed" and (s.get("culprit") or {}).get(
        "culprit", "").startswith(planted)]
    print(f"  the planted slowdown ({planted}) confirmed with its culprit: {'yes' if hits else 'NO'}")
    if proc.returncode:
        print(proc.stdout[-2000:])


def aa_history(tmp: Path, extra: int = 20) -> None:
    import git

    out = tmp / "aa"
    path = example.materialize(tmp / "aa-repo")
    repo = git.Repo(path)
    for i in range(extra):
        (path / "NOTES.md").write_text(f"note {i}\n")
        repo.index.add(["NOTES.md"])
        repo.index.commit(f"docs: note {i}")
    print(f"\n== an A/A history: the example's last commit and {extra} docs-only commits, measured: torchbench run",
          flush=True)
    start = time.perf_counter()
    tb("run", "--repo", path, "--last", str(extra + 1), "--out", out, "--no-publish")
    print(f"  measured in {(time.perf_counter() - start) / 60:.1f} min")
    subjects = {c.hexsha: c.summary for c in repo.iter_commits("HEAD")}
    ours, theirs = _detect_both(out, path)
    _show(ours, theirs, subjects)
    if ours:
        start = time.perf_counter()
        tb("find", "--repo", path, "--out", out, "--no-profile")
        record = json.loads((out / steprecord.RECORD).read_text())
        statuses = [s["status"] for s in record["steps"]]
        print(f"  confirmation ({(time.perf_counter() - start) / 60:.1f} min): "
              f"{ {s: statuses.count(s) for s in set(statuses)} }")
    print(f"  false steps reported: ours {sum(1 for _ in ours) if not ours else 'see confirmation'}; "
          f"asv {len(theirs)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evidence", type=Path, nargs="+",
                        help="per-process values to reuse: alert evidence.json files or a evaluation/alert_power.py pool")
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2, run.DEFAULT_ROUNDS],
                        help="processes a commit in the synthetic histories (run --rounds)")
    parser.add_argument("--skip-histories", action="store_true", help="only the synthetic part")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="changepoint-validation-"))
    try:
        pools = load_pools(args.evidence) if args.evidence else measure_pools(tmp)
        for k in args.processes:
            synthetic(pools, k)
        if not args.skip_histories:
            example_history(tmp)
            aa_history(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
