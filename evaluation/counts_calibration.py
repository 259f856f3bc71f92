"""Calibrate the instruction-count test on the pool of identical code at many commits, and replay it (issue 50).

Reads evaluation/counts_noise_pool.py's pool and, per kind of row (the timer suite's TimerSuite statements,
the plain suite's `time_` methods counted call by call), fits the two constants of
torchbench/ab/count_decision.py and measures the rule they make:

    FIRST_MOVE  the 99th percentile of |log(head/base)| of a first process a side between adjacent commits
                (a row below it is "flat": the wall-time bar is stricter for it)
    COMMIT_SD   the smallest commit noise (log sd, on a 0.01% grid) beyond the layouts' own spread at which
                the test's A/A p-values hold at 5% and at its own level, COUNT_ALPHA (at most 5% of the
                pairs' rows have p <= 0.05, at most 1% p <= 0.01), and the whole rule decides at most
                AA_DECIDED of them (the issue's goal, 0.1%: on a pool of 30 pairs and 1,665 rows that was
                none; the pool of independent layouts, 94 pairs and 4,704 rows, shows commits that move a
                row's counts in every layout by 1.3-1.5%, which a fit to none would price into every row)
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

from torchbench.ab.count_decision import BY_CALL, COUNT_ALPHA, DRAWS, STATEMENT, count_decision  # noqa: E402
from torchbench.ab.counts import NEAR  # noqa: E402

# the pool the constants are fitted on: each commit's jittered process draws layouts of its own (salted)
POOL = ROOT / "evaluation" / "results" / "counts_noise_pool-2026-11-28.json.gz"
# the pool before it, whose commits drew their layouts alike (the same seeds): it alone has the two jittered
# processes of one layout each ("j1", "j2") that the rules before the layout draws are replayed on
ALIKE_POOL = ROOT / "evaluation" / "results" / "counts_noise_pool-2026-11-27.json.gz"
KINDS = {"timer": STATEMENT, "plain": BY_CALL}
GRID = np.arange(0, 0.02, 0.0001)  # commit noise candidates, log sd
LEVEL = 0.05  # the A/A p-values must hold here
LEVELS = (LEVEL, COUNT_ALPHA)  # ... and at the level the test decides at
AA_DECIDED = 0.001  # the share of the pool's A/A rows the whole rule may decide (the issue's goal)
OLD_FACTOR, OLD_FLOOR = 5, 0.006  # the previous rule's margin (counts.py before issue 50)


def load(path: Path = POOL) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()))


# the alert's layouts a side: the first process's, then one jittered process's DRAWS layout draws
# (counts_noise_pool.py --draws: "j1d0" .. ); the rule before them: two jittered processes ("j1", "j2")
DRAWN = ["0"] + [f"j1d{d}" for d in range(DRAWS)]
PROCESSES = ["0", "j1", "j2"]
PROCESSES_COMMIT_SD = {STATEMENT: 0.0018, BY_CALL: 0.0}  # that rule's constants (count_decision.py before draws)


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


REPEAT = 0.001  # two commits' layout draws "repeat" each other where every draw agrees within this


def repeated_layouts(suite: dict, field: str = "counts") -> float:
    """The share of the pairs' rows whose jittered draws repeat between the two commits (every draw's mean
    within REPEAT of the other commit's same draw): a pool whose commits draw alike (the same seeds, code
    that moves little) holds fewer independent layouts than pairs."""
    repeats = [all(abs(math.log(np.mean(suite[field][b][d][job]) / np.mean(suite[field][a][d][job]))) < REPEAT
                   for d in DRAWN[1:])
               for a, b, job in _rows(suite, field, True)]
    return float(np.mean(repeats)) if repeats else math.nan


def aa_p_values(suite: dict, kind: str, commit_sd: float, field: str = "counts") -> np.ndarray:
    ps = []
    for a, b, job in _rows(suite, field, True):
        t = count_decision(processes(suite, a, job, field=field), processes(suite, b, job, field=field), kind, 0.0,
                       commit_sd=commit_sd)
        if t is not None:
            ps.append(t.p_value)
    return np.array(ps)


def holds(suite: dict, kind: str, commit_sd: float, field: str = "counts", floor: float = 0.01) -> bool:
    """The A/A p-values hold at LEVEL and at the test's own level (COUNT_ALPHA), and the whole rule decides
    at most AA_DECIDED of the pool's A/A rows."""
    p = aa_p_values(suite, kind, commit_sd, field)
    decided, rows = aa_decided(suite, kind, floor, commit_sd, field)
    return all(np.mean(p <= level) <= level for level in LEVELS) and decided <= AA_DECIDED * rows


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


def halves(suite: dict) -> list[dict]:
    """The suite with its commits with draws split in two (alternate commits): pairs within each half."""
    commits = jittered_commits(suite)
    out = []
    for half in (commits[0::2], commits[1::2]):
        keep = set(half)
        out.append({**suite, **{field: {c: by for c, by in suite.get(field, {}).items() if c in keep}
                                for field in ("counts", "cycles")}})
    return out


def held_out(suite: dict, kind: str, floor: float) -> list[dict]:
    """COMMIT_SD fitted on one half of the commits (`halves`), the rule replayed on the other's pairs: the
    pool's figures out of sample, each way."""
    out = []
    for fit_on, test_on in itertools.permutations(halves(suite)):
        sd = fit_commit_sd(fit_on, kind)
        r = replay(test_on, kind, floor, sd)
        out.append({"commit_sd": sd, "pairs": len(pairs(test_on)),
                    **{factor: [v["ours"], v["rows"]] for factor, v in r.items()}})
    return out


def first_move(suite: dict, field: str = "counts") -> float:
    return round(float(np.quantile(first_moves(suite, field), 0.99)), 4)


def rule(base: list[list[float]], head: list[list[float]], kind: str, floor: float, commit_sd: float) -> str:
    """The alert's rule on one row: "decided", "near" (a second jittered process would count it: the pool
    has none, so it is not decided here) or "" (a first process a side, then the jittered layouts for a
    candidate)."""
    first = count_decision(base[:1], head[:1], kind, floor, commit_sd=commit_sd)
    if first is None or not first.pending:
        return ""
    t = count_decision(base, head, kind, floor, commit_sd=commit_sd)
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


def fit_over(suites: list[dict], kind: str, field: str = "counts") -> tuple[float, list[float]]:
    """COMMIT_SD held on every pool of the kind: the largest of each pool's fit (each pool's fit, beside)."""
    fits = [fit_commit_sd(suite, kind, field) for suite in suites]
    return max(fits), fits


def calibrate(pool: dict, floor: float, others: list[dict] = ()) -> dict:
    """The constants per suite of `pool`; COMMIT_SD held on the same suite of `others` too (fit_over)."""
    out = {}
    for name, suite in pool["suites"].items():
        kind = KINDS[name]
        sd, fits = fit_over([suite, *(o["suites"][name] for o in others if name in o["suites"])], kind)
        move = first_move(suite)
        moves, p = first_moves(suite), aa_p_values(suite, kind, sd)
        out[name] = {"kind": kind, "commit_sd": sd, "fits": fits, "first_move": move, "rows": len(suite["jobs"]),
                     "adjacent_pairs": len(set(c for c, by in suite["counts"].items() if "0" in by)) - 1,
                     "jittered_pairs": len(pairs(suite)), "process_pairs": len(pairs(suite, drawn=False)),
                     "candidates": float(np.mean(moves >= floor)),
                     "first_moves": {q: float(np.quantile(moves, float(q))) for q in ("0.5", "0.9", "0.99", "1")},
                     "aa_level": float(np.mean(p <= LEVEL)), "aa_alpha": float(np.mean(p <= COUNT_ALPHA)),
                     "salted": bool(suite.get("salted")), "repeated_layouts": repeated_layouts(suite),
                     "replay": replay(suite, kind, floor, sd), "held_out": held_out(suite, kind, floor)}
        if pairs(suite, "cycles"):  # simulated cycles: the same test, their own commit noise (on every pool)
            cycles_sd, cycles_fits = fit_over([suite, *(o["suites"][name] for o in others if name in o["suites"]
                                                      and pairs(o["suites"][name], "cycles"))], kind, "cycles")
            cycles_p = aa_p_values(suite, kind, cycles_sd, "cycles")
            out[name]["cycles"] = {"commit_sd": cycles_sd, "fits": cycles_fits,
                                   "jittered_pairs": len(pairs(suite, "cycles")),
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
    others = [load(ALIKE_POOL)] if args.pool != ALIKE_POOL and ALIKE_POOL.exists() else []
    found = calibrate(load(args.pool), args.floor, others)
    for name, f in found.items():
        print(f"== {name} ({f['kind']}): {f['rows']} rows, {f['adjacent_pairs']} adjacent commit pairs, "
              f"{f['jittered_pairs']} pairs with a jittered process of {DRAWS} layout draws "
              f"({f['process_pairs']} with two jittered processes); the draws "
              + ("salted by commit" if f["salted"] else "alike for every commit")
              + f", repeating between the pair's commits on {f['repeated_layouts']:.1%} of rows")
        print("  a first process's A/A move, quantiles 50/90/99/max: "
              + " / ".join(f"{v:.3%}" for v in f["first_moves"].values())
              + f"; candidates (>= {args.floor:.0%}): {f['candidates']:.1%}")
        if len(f["fits"]) > 1:
            print(f"  COMMIT_SD fitted on this pool {f['fits'][0]:.4f}, on {ALIKE_POOL.name} (its draws alike a "
                  f"commit) {f['fits'][1]:.4f}: the larger holds on both")
        print(f"  COMMIT_SD {f['commit_sd']:.4f}, FIRST_MOVE {f['first_move']:.4f}; A/A p <= {LEVEL}: "
              f"{f['aa_level']:.1%} of rows, p <= {COUNT_ALPHA} (COUNT_ALPHA): {f['aa_alpha']:.2%}")
        for factor, r in f["replay"].items():
            what = "A/A rows decided" if factor == "1.00" else f"rows decided at +{float(factor) - 1:.0%}"
            anchors = (f"; two jittered processes {r['processes']}/{r['rows_processes']} "
                       f"({r['processes'] / r['rows_processes']:.1%}); 5 x spread {r['old']}/{r['rows_processes']} "
                       f"({r['old'] / r['rows_processes']:.1%})") if r["rows_processes"] else ""
            print(f"  {what:22}: ours {r['ours']}/{r['rows']} ({r['ours'] / r['rows']:.1%}; {r['near']} more near "
                  f"their bar: a second jittered process){anchors}")
        for h in f["held_out"]:
            print(f"  held out: COMMIT_SD {h['commit_sd']:.4f} fitted on half the commits, replayed on the other "
                  f"half's {h['pairs']} pairs: A/A decided {h['1.00'][0]}/{h['1.00'][1]}, +2% "
                  f"{h['1.02'][0] / h['1.02'][1]:.1%}, +5% {h['1.05'][0] / h['1.05'][1]:.1%}")
        if "cycles" in f:
            c = f["cycles"]
            print(f"  simulated cycles: CYCLES_COMMIT_SD {c['commit_sd']:.4f} ({c['jittered_pairs']} jittered pairs; "
                  f"fitted on each pool: {' / '.join(f'{x:.4f}' for x in c['fits'])}), "
                  f"first move 99th percentile {c['first_move']:.2%}; A/A p <= {LEVEL}: {c['aa_level']:.1%}, p <= "
                  f"{COUNT_ALPHA}: {c['aa_alpha']:.2%}; "
                  f"A/A rows decided {c['aa_decided'][0]}/{c['aa_decided'][1]}")
    print(json.dumps({name: {"commit_sd": f["commit_sd"], "first_move": f["first_move"],
                             "cycles_commit_sd": f.get("cycles", {}).get("commit_sd")} for name, f in found.items()}))


if __name__ == "__main__":
    main()
