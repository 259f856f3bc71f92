"""Calibrate the instruction-count test on the pool of identical code at many commits, and replay it (issue 50).

Reads evaluation/counts_noise_pool.py's pool and, per kind of row (the timer suite's TimerSuite statements,
the plain suite's `time_` methods counted call by call), fits the two constants of
torchbench/ab/count_test.py and measures the rule they make:

    FIRST_MOVE  the 99th percentile of |log(head/base)| of a first process a side between adjacent commits
                (a row below it is "flat": the wall-time bar is stricter for it)
    COMMIT_SD   the smallest commit noise (log sd, on a 0.01% grid) beyond the layouts' own spread at which
                the test's A/A p-values hold at 5% and at its own level, COUNT_ALPHA (at most 5% of the
                pairs' rows have p <= 0.05, at most 1% p <= 0.01), and the whole rule decides none of them
    (and, where the pool has simulated cycles, the same fit for them: channels.CYCLES_COMMIT_SD)

The test's layouts a side are the alert's: the first process's, then one jittered process's DRAWS layout
draws (the pool's "j1d0" .. "j1d7", counts_noise_pool.py --draws). The whole rule (a first process a side;
a row moved by at least the floor counted in the draws; decided at COUNT_ALPHA) is replayed on every pair of
commits with draws: the share of A/A rows decided, and the share of rows decided when the head's counts of
that row are raised by 2% and by 5% (a compute change: every layout's counts scaled), with the rows that
would get a second jittered process (near their bar: the pool has none, so they count as not decided).
Beside it, on the pool's commits with two jittered processes of one layout each ("j1", "j2"), the rule
those replaced (the same test on three processes a side, with its own constants) and the rule before that
(counts.py before issue 50: 5 x the repeats' spread or the processes' difference, at least 0.6%, beyond the
1% floor).

    python evaluation/counts_calibration.py [POOL] [--floor 0.01]
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from torchbench.ab.count_test import BY_CALL, COUNT_ALPHA, DRAWS, STATEMENT, count_test  # noqa: E402
from torchbench.ab.counts import NEAR  # noqa: E402

POOL = ROOT / "evaluation" / "results" / "counts_noise_pool-2026-11-27.json.gz"
KINDS = {"timer": STATEMENT, "plain": BY_CALL}
GRID = np.arange(0, 0.02, 0.0001)  # commit noise candidates, log sd
LEVEL = 0.05  # the A/A p-values must hold here
LEVELS = (LEVEL, COUNT_ALPHA)  # ... and at the level the test decides at
OLD_FACTOR, OLD_FLOOR = 5, 0.006  # the previous rule's margin (counts.py before issue 50)


def load(path: Path = POOL) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()))


# the alert's layouts a side: the first process's, then one jittered process's DRAWS layout draws
# (counts_noise_pool.py --draws: "j1d0" .. ); the rule before them: two jittered processes ("j1", "j2")
DRAWN = ["0"] + [f"j1d{d}" for d in range(DRAWS)]
PROCESSES = ["0", "j1", "j2"]
PROCESSES_COMMIT_SD = {STATEMENT: 0.0018, BY_CALL: 0.0}  # that rule's constants (count_test.py before draws)


def layouts(suite: dict, drawn: bool = True) -> list[str]:
    return DRAWN if drawn else PROCESSES


def jittered_commits(suite: dict, field: str = "counts", drawn: bool = True) -> list[str]:
    """The commits counted (or simulated: field "cycles") in the first layout and every jittered one."""
    by_commit = suite.get(field, {})
    return sorted((c for c, by in by_commit.items() if all(by.get(layout) for layout in layouts(suite, drawn))),
                  key=int)


def processes(suite: dict, commit: str, job: str, factor: float = 1.0, field: str = "counts",
              drawn: bool = True) -> list[list[float]]:
    return [[v * factor for v in suite[field][commit][layout][job]] for layout in layouts(suite, drawn)]


def first_moves(suite: dict, field: str = "counts") -> np.ndarray:
    """|log(head/base)| of first processes between adjacent commits, every row."""
    commits = sorted((c for c, by in suite.get(field, {}).items() if by.get("0")), key=int)
    moves = []
    for a, b in zip(commits, commits[1:]):
        for job in suite["jobs"]:
            x, y = suite[field][a]["0"].get(job), suite[field][b]["0"].get(job)
            if x and y:
                moves.append(abs(math.log(np.mean(y) / np.mean(x))))
    return np.array(moves)


def pairs(suite: dict, field: str = "counts", drawn: bool = True) -> list[tuple[str, str]]:
    return list(itertools.combinations(jittered_commits(suite, field, drawn), 2))


def _rows(suite: dict, field: str, drawn: bool):
    """(base commit, head commit, job) of every pair's rows that every layout of both commits has."""
    for a, b in pairs(suite, field, drawn):
        for job in suite["jobs"]:
            if all(job in suite[field][c][layout] for c in (a, b) for layout in layouts(suite, drawn)):
                yield a, b, job


def aa_p_values(suite: dict, kind: str, commit_sd: float, field: str = "counts") -> np.ndarray:
    ps = []
    for a, b, job in _rows(suite, field, True):
        t = count_test(processes(suite, a, job, field=field), processes(suite, b, job, field=field), kind, 0.0,
                       commit_sd=commit_sd)
        if t is not None:
            ps.append(t.p_value)
    return np.array(ps)


def holds(suite: dict, kind: str, commit_sd: float, field: str = "counts", floor: float = 0.01) -> bool:
    """The A/A p-values hold at LEVEL and at the test's own level (COUNT_ALPHA), and the whole rule decides
    no A/A row of the pool."""
    p = aa_p_values(suite, kind, commit_sd, field)
    return (all(np.mean(p <= level) <= level for level in LEVELS)
            and aa_decided(suite, kind, floor, commit_sd, field)[0] == 0)


def fit_commit_sd(suite: dict, kind: str, field: str = "counts") -> float:
    """The smallest grid value at which the A/A p-values hold at LEVEL and the rule decides no A/A row (both
    only get easier as the commit noise grows, so a bisection of the grid finds it)."""
    low, high = 0, len(GRID) - 1
    while low < high:
        mid = (low + high) // 2
        if holds(suite, kind, float(GRID[mid]), field):
            high = mid
        else:
            low = mid + 1
    return round(float(GRID[low]), 4)


def first_move(suite: dict, field: str = "counts") -> float:
    return round(float(np.quantile(first_moves(suite, field), 0.99)), 4)


def rule(base: list[list[float]], head: list[list[float]], kind: str, floor: float, commit_sd: float) -> str:
    """The alert's rule on one row: "decided", "near" (a second jittered process would count it: the pool
    has none, so it is not decided here) or "" (a first process a side, then the jittered layouts for a
    candidate)."""
    first = count_test(base[:1], head[:1], kind, floor, commit_sd=commit_sd)
    if first is None or not first.pending:
        return ""
    t = count_test(base, head, kind, floor, commit_sd=commit_sd)
    return "decided" if t.decides else "near" if abs(t.delta) >= floor and t.p_value <= NEAR else ""


def old_rule(base: list[list[float]], head: list[list[float]], floor: float) -> bool:
    """counts.py before issue 50 (a TimerSuite case's pooled processes; its second process the first jittered)."""
    runs = {"base": base[:2], "head": head[:2]}
    spread = 0.0
    for side in runs.values():
        medians = [float(np.median(v)) for v in side]
        spread = max(spread, max((max(v) - min(v)) / np.median(v) for v in side),
                     abs(medians[0] - medians[1]) / min(medians))
    mb, mh = (float(np.median(np.concatenate(runs[s]))) for s in ("base", "head"))
    delta = mh / mb - 1
    return abs(delta) > max(OLD_FACTOR * spread, OLD_FLOOR) and abs(delta) >= floor


def replay(suite: dict, kind: str, floor: float, commit_sd: float) -> dict:
    """Each rule on every pair of commits it has the layouts of, the head's counts raised by 0, 2 and 5%."""
    found = {}
    for factor in (1.0, 1.02, 1.05):
        ours = near = total = 0
        for a, b, job in _rows(suite, "counts", True):
            verdict = rule(processes(suite, a, job), processes(suite, b, job, factor), kind, floor, commit_sd)
            total += 1
            ours += verdict == "decided"
            near += verdict == "near"
        earlier = old = total_p = 0
        for a, b, job in _rows(suite, "counts", False):
            base, head = processes(suite, a, job, drawn=False), processes(suite, b, job, factor, drawn=False)
            total_p += 1
            earlier += rule(base, head, kind, floor, PROCESSES_COMMIT_SD[kind]) == "decided"
            old += old_rule(base, head, floor)
        found[f"{factor:.2f}"] = {"rows": total, "ours": ours, "near": near, "rows_processes": total_p,
                                  "processes": earlier, "old": old}
    return found


def calibrate(pool: dict, floor: float) -> dict:
    out = {}
    for name, suite in pool["suites"].items():
        kind = KINDS[name]
        sd, move = fit_commit_sd(suite, kind), first_move(suite)
        moves, p = first_moves(suite), aa_p_values(suite, kind, sd)
        out[name] = {"kind": kind, "commit_sd": sd, "first_move": move, "rows": len(suite["jobs"]),
                     "adjacent_pairs": len(set(c for c, by in suite["counts"].items() if "0" in by)) - 1,
                     "jittered_pairs": len(pairs(suite)), "process_pairs": len(pairs(suite, drawn=False)),
                     "candidates": float(np.mean(moves >= floor)),
                     "first_moves": {q: float(np.quantile(moves, float(q))) for q in ("0.5", "0.9", "0.99", "1")},
                     "aa_level": float(np.mean(p <= LEVEL)), "aa_alpha": float(np.mean(p <= COUNT_ALPHA)),
                     "replay": replay(suite, kind, floor, sd)}
        if pairs(suite, "cycles"):  # simulated cycles: the same test, their own commit noise
            cycles_sd = fit_commit_sd(suite, kind, "cycles")
            cycles_p = aa_p_values(suite, kind, cycles_sd, "cycles")
            out[name]["cycles"] = {"commit_sd": cycles_sd, "jittered_pairs": len(pairs(suite, "cycles")),
                                   "first_move": first_move(suite, "cycles"),
                                   "aa_level": float(np.mean(cycles_p <= LEVEL)),
                                   "aa_alpha": float(np.mean(cycles_p <= COUNT_ALPHA)),
                                   "aa_decided": aa_decided(suite, kind, floor, cycles_sd, "cycles")}
    return out


def aa_decided(suite: dict, kind: str, floor: float, commit_sd: float, field: str) -> list[int]:
    """[rows decided, rows] of the whole rule on every jittered pair's identical rows."""
    decided = total = 0
    for a, b, job in _rows(suite, field, True):
        total += 1
        decided += rule(processes(suite, a, job, field=field), processes(suite, b, job, field=field), kind,
                        floor, commit_sd) == "decided"
    return [decided, total]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pool", nargs="?", type=Path, default=POOL)
    parser.add_argument("--floor", type=float, default=0.01)
    args = parser.parse_args()
    found = calibrate(load(args.pool), args.floor)
    for name, f in found.items():
        print(f"== {name} ({f['kind']}): {f['rows']} rows, {f['adjacent_pairs']} adjacent commit pairs, "
              f"{f['jittered_pairs']} pairs with a jittered process of {DRAWS} layout draws "
              f"({f['process_pairs']} with two jittered processes)")
        print("  a first process's A/A move, quantiles 50/90/99/max: "
              + " / ".join(f"{v:.3%}" for v in f["first_moves"].values())
              + f"; candidates (>= {args.floor:.0%}): {f['candidates']:.1%}")
        print(f"  COMMIT_SD {f['commit_sd']:.4f}, FIRST_MOVE {f['first_move']:.4f}; A/A p <= {LEVEL}: "
              f"{f['aa_level']:.1%} of rows, p <= {COUNT_ALPHA} (COUNT_ALPHA): {f['aa_alpha']:.2%}")
        for factor, r in f["replay"].items():
            what = "A/A rows decided" if factor == "1.00" else f"rows decided at +{float(factor) - 1:.0%}"
            print(f"  {what:22}: ours {r['ours']}/{r['rows']} ({r['ours'] / r['rows']:.1%}; {r['near']} more near "
                  f"their bar: a second jittered process); two jittered processes {r['processes']}/"
                  f"{r['rows_processes']} ({r['processes'] / r['rows_processes']:.1%}); 5 x spread {r['old']}/"
                  f"{r['rows_processes']} ({r['old'] / r['rows_processes']:.1%})")
        if "cycles" in f:
            c = f["cycles"]
            print(f"  simulated cycles: CYCLES_COMMIT_SD {c['commit_sd']:.4f} ({c['jittered_pairs']} jittered pairs), "
                  f"first move 99th percentile {c['first_move']:.2%}; A/A p <= {LEVEL}: {c['aa_level']:.1%}, p <= "
                  f"{COUNT_ALPHA}: {c['aa_alpha']:.2%}; "
                  f"A/A rows decided {c['aa_decided'][0]}/{c['aa_decided'][1]}")
    print(json.dumps({name: {"commit_sd": f["commit_sd"], "first_move": f["first_move"],
                             "cycles_commit_sd": f.get("cycles", {}).get("commit_sd")} for name, f in found.items()}))


if __name__ == "__main__":
    main()
