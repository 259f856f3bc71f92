"""The design chosen from the data (issue 51, item 6), replayed on recorded pools of both designs.

`torchbench alert --design auto` (the default) runs its first rounds in both
designs interleaved, then goes on with the one whose projected MDE at the end
of the budget is smaller (torchbench/ab/design_choice.py). This script replays
that rule on the pools evaluation/duet_pool.py recorded on one day: 60 rounds
of each design, interleaved, the example's six dispatch cases, A/A (arms c5
and c6: identical code), each round's seconds kept.

A trial of a budget of T seconds of rounds draws, without replacement:

    alternating   the alternating pool's rounds while their seconds fit T
    duet          the duet pool's rounds while theirs fit T, decided by the paired test
    duet unpaired the same duet rounds decided by the unpaired test (an arm
                  auto can end in: every arm it can choose is a fixed design)
    auto          K rounds of each, in the order design_choice.trial_designs
                  draws, then design_choice.choose on an Evidence of them (the
                  alert's own call), then rounds of the chosen design's pool
                  while the total fits T

and states each row's MDE as the verdict would: contrast.compare_row (the
test the run went on with: for duets the paired or the unpaired test, as the
choice projected the better; for alternating rounds the unpaired one, held to
the suite's slow processes) at a lone row's bar among 60 rows, the whole
rule's MDE (the 2% floor included). The figure is the median over the six
rows; the table gives its median over trials for each, and auto's against
the best of the three fixed arms' (goal: within 10%). T is given as the alternating
rounds it holds (the issue's held-out suite: 21 rounds in 10 minutes). The
pools being identical code, each design's rows at p <= 5% and those flagged
at the bar are counted too (a lone pool: its trials share most rounds, and
two installations of the same code can differ by their layout, so the share
at p <= 5% is a rough check, not a rate).

Scenarios: `recorded` (the pools as measured: on that day a duet's two
processes shared three quarters of their variance), and `unshared-F`,
constructed: each duet round's head taken from another duet round (nothing
shared) and every duet value's deviation from its case's median scaled by F
(the processes disturbing each other), so that alternating should win, as on
a quiet day. Beside auto: each design as if chosen after the same trial (the
trial's own cost), the chosen design's rounds alone, the duets' other test,
and K = 2, 3, 6 (the trial's length).

    python evaluation/design_choice.py [--trials 40] [--budgets 12 16 21] [--pool-day 2026-11-26]
                                       [--by-rounds 20] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "evaluation"))

from stats_validation import job_of, pool_cases, read_pool  # noqa: E402

from torchbench import stats  # noqa: E402
from torchbench.ab import design_choice  # noqa: E402
from torchbench.ab.contrast import compare_row  # noqa: E402
from torchbench.ab.design_choice import ALTERNATING, DUET  # noqa: E402
from torchbench.ab.evidence import Evidence, JobInfo  # noqa: E402
from torchbench.ab.options import Policy  # noqa: E402
from torchbench_core.storage import atomic_write_text  # noqa: E402

RESULTS = ROOT / "evaluation" / "results"
POOL_DATE = "2026-11-26"  # the pools' day (evaluation/results/duet_pool-<design>-<day>.json.gz)
ROWS = 60  # the bar of a lone row among this many (as evaluation/stats_validation.py states MDEs)
OTHER_TEST = {"paired": "unpaired", "unpaired": "paired"}
AA_LEVEL = 0.05  # the pools are identical code: at most this share of rows should have p <= it
DUET_UNPAIRED = "duet unpaired"  # the duet rounds decided by the unpaired test: the third arm auto can choose
ARMS = (ALTERNATING, DUET, DUET_UNPAIRED)


def pool_paths(day: str = POOL_DATE) -> dict[str, Path]:
    return {d: RESULTS / f"duet_pool-{d}-{day}.json.gz" for d in (ALTERNATING, DUET)}


class Pool:
    """One design's recorded rounds: per case (rounds, 2) values of arms c5 and c6 (stats_validation.load_pool)
    and each round's seconds."""

    def __init__(self, path: Path):
        doc = read_pool(path)
        self.cases = pool_cases(doc)
        self.seconds = np.asarray(doc["seconds"], dtype=float)
        if any(len(v) != len(self.seconds) for v in self.cases.values()):
            raise SystemExit(f"{path.name}: a case is missing from some rounds; the replay needs every round whole")

    def unshared(self, factor: float, rng) -> "Pool":
        """The constructed adverse day: each round's second arm from another round (nothing shared), every
        value's log deviation from its case's median times `factor`."""
        out = object.__new__(Pool)
        out.seconds = self.seconds
        other = rng.permutation(len(self.seconds))
        out.cases = {}
        for key, v in self.cases.items():
            logs = np.log(v)
            centre = np.median(logs)
            scaled = np.exp(centre + factor * (logs - centre))
            out.cases[key] = np.column_stack([scaled[:, 0], scaled[other, 1]])
        return out


def evidence_of(pools: dict[str, Pool], plan: list[tuple[str, int]], arm: int, schedule: str) -> Evidence:
    """An Evidence of the planned rounds ((design, pool round) in order): base arm `arm`, head the other."""
    evidence = Evidence(schedule=schedule)
    for key in pools[ALTERNATING].cases:
        evidence.jobs[job_of(key)] = JobInfo(key, unit="seconds", on_base=True, on_head=True)
    for r, (design, index) in enumerate(plan):
        pool = pools[design]
        evidence.round_designs.append(design)
        evidence.round_seconds.append(float(pool.seconds[index]))
        for key, v in pool.cases.items():
            evidence.add_value("base", job_of(key), float(v[index, arm]), r)
            evidence.add_value("head", job_of(key), float(v[index, 1 - arm]), r)
    evidence.rounds = len(plan)
    return evidence


def figures(evidence: Evidence, policy: Policy, bar: float) -> dict:
    """Each row's comparison as the verdict states it (contrast.compare_row at the bar): the median over the
    rows of the MDE (the whole rule's), and, the pools being identical code, the rows whose p-value is at most
    AA_LEVEL and those the rule flags at the bar (stats.classify: what a lone row needs under
    Benjamini-Hochberg)."""
    jobs = sorted(evidence.jobs)
    noise = stats.SuiteNoise([evidence.wall_values(j) for j in jobs])
    found = [compare_row(evidence, job, policy, bar, policy.confidence, noise=noise) for job in jobs]
    flagged = [stats.classify(c, c.p_value <= bar, floor=policy.floor, threshold=policy.threshold)
               in (stats.REGRESSED, stats.IMPROVED) for c in found]
    return {"mde": float(np.median([c.mde for c in found])), "rows": len(found),
            "p_low": sum(c.p_value <= AA_LEVEL for c in found), "flagged": sum(flagged)}


def _fill(order: np.ndarray, seconds: np.ndarray, budget: float, start: int = 0) -> list[int]:
    """The pool rounds of `order` from `start`, in turn, while their seconds fit `budget`."""
    taken, spent = [], 0.0
    for index in order[start:]:
        if spent + seconds[index] > budget:
            break
        taken.append(int(index))
        spent += seconds[index]
    return taken


def trial(pools: dict[str, Pool], budget: float, ks: list[int], policy: Policy, bar: float, rng, seed: int,
          variants: bool) -> dict:
    """One trial: each fixed design's median MDE at `budget` seconds, and auto's at each K in `ks`."""
    arm = int(rng.random() < 0.5)
    orders = {d: rng.permutation(len(pools[d].seconds)) for d in pools}
    out = {}
    for design in (ALTERNATING, DUET):
        plan = [(design, i) for i in _fill(orders[design], pools[design].seconds, budget)]
        out[design] = {"rounds": len(plan), **figures(evidence_of(pools, plan, arm, design), policy, bar)}
        if design == DUET:  # the same rounds, decided by the unpaired test (as auto's choice may record)
            unpaired = evidence_of(pools, plan, arm, design)
            unpaired.design_choice = {"design": DUET, "test": "unpaired"}
            out[DUET_UNPAIRED] = {"rounds": len(plan), **figures(unpaired, policy, bar)}
    for k in ks:
        designs = design_choice.trial_designs(seed, k)
        used = {ALTERNATING: 0, DUET: 0}
        plan = []
        for design in designs:
            plan.append((design, int(orders[design][used[design]])))
            used[design] += 1
        trial_evidence = evidence_of(pools, plan, arm, design_choice.AUTO)
        spent = sum(trial_evidence.round_seconds)
        choice = design_choice.choose(trial_evidence, sorted(trial_evidence.jobs), seconds_left=budget - spent,
                                      rounds_left=10 ** 6, bar=bar, power=policy.power)
        chosen = choice.design

        def after_trial(design: str, plan=plan, used=used, spent=spent) -> list[tuple[str, int]]:
            """The trial's rounds, then `design`'s while the budget holds them."""
            return plan + [(design, i) for i in _fill(orders[design], pools[design].seconds, budget - spent,
                                                      used[design])]

        plan = after_trial(chosen)
        evidence = evidence_of(pools, plan, arm, chosen)
        evidence.design_choice = choice.to_dict()  # as go_on records it: the verdict reads which rounds to test
        found = {"chosen": chosen, "test": choice.test, "rounds": len(plan), **figures(evidence, policy, bar),
                 "projected": {d: f.mde for d, f in choice.figures.items()}}
        if variants:  # each design as if chosen after the same trial: what the trial itself costs
            found[f"if_{chosen}"] = found["mde"]
            for other in {ALTERNATING, DUET} - {chosen}:
                forced = evidence_of(pools, after_trial(other), arm, other)
                forced.design_choice = {**choice.to_dict(), "design": other, "test": choice.figures[other].test}
                found[f"if_{other}"] = figures(forced, policy, bar)["mde"]
        if variants and chosen == DUET:  # the same rounds decided by the other test
            flipped = evidence_of(pools, plan, arm, chosen)
            flipped.design_choice = {**choice.to_dict(), "test": OTHER_TEST[choice.test]}
            found["mde_other_test"] = figures(flipped, policy, bar)["mde"]
        if variants:  # the test on the chosen design's rounds alone (the trial's others dropped)
            kept = evidence_of(pools, [(d, i) for d, i in plan if d == chosen], arm, chosen)
            kept.design_choice = {"design": chosen, "test": choice.test}
            found["mde_chosen_only"] = figures(kept, policy, bar)["mde"]
        out[f"auto-{k}"] = found
    return out


def by_rounds(pools: dict[str, Pool], policy: Policy, bar: float, draws: int) -> dict:
    """Each fixed design under each test it may have (duets: paired or unpaired), at several round counts:
    the median over `draws` draws (rounds without replacement, the base arm at random) of the median row's
    MDE. The evidence the choice of the duets' test rests on."""
    out = {}
    for design, tests, rounds in ((ALTERNATING, ("unpaired",), (10, 15, 20)),
                                  (DUET, ("unpaired", "paired"), (20, 30, 40))):
        for test in tests:
            for n in rounds:
                rng = np.random.default_rng(n)
                found = []
                for _ in range(draws):
                    arm = int(rng.random() < 0.5)
                    drawn = rng.permutation(len(pools[design].seconds))[:n]
                    evidence = evidence_of(pools, [(design, int(i)) for i in drawn], arm, design)
                    evidence.design_choice = {"design": design, "test": test}
                    found.append(figures(evidence, policy, bar)["mde"])
                out[f"{design} {test} {n}"] = float(np.median(found))
    return out


def summarise(trials: list[dict], ks: list[int]) -> dict:
    def med(values):
        finite = [v for v in values if v is not None]
        return float(np.median(finite)) if finite else math.nan

    fixed = {d: med([t[d]["mde"] for t in trials]) for d in ARMS}
    better = min(fixed, key=fixed.get)
    def aa(entries: list[dict]) -> dict:  # identical code: the share of rows at p <= AA_LEVEL, the rows flagged
        rows = sum(e["rows"] for e in entries)
        return {"p_low": sum(e["p_low"] for e in entries) / rows, "flagged": sum(e["flagged"] for e in entries),
                "rows": rows}

    out = {"fixed": fixed, "fixed_rounds": {d: med([t[d]["rounds"] for t in trials]) for d in fixed},
           "better": better, "aa": {d: aa([t[d] for t in trials]) for d in fixed}, "auto": {}}
    for k in ks:
        runs = [t[f"auto-{k}"] for t in trials]
        mde = med([r["mde"] for r in runs])
        chosen = {d: sum(r["chosen"] == d for r in runs) / len(runs) for d in (ALTERNATING, DUET)}
        # per trial: auto's MDE against the better fixed design's in the same draws
        paired_ratio = med([r["mde"] / min(t[d]["mde"] for d in ARMS) for r, t in zip(runs, trials)])
        entry = {"mde": mde, "ratio": mde / fixed[better], "trial_ratio": paired_ratio, "chosen": chosen,
                 "tests": {t: sum(r["chosen"] == DUET and r["test"] == t for r in runs) / len(runs)
                           for t in OTHER_TEST},
                 "rounds": med([r["rounds"] for r in runs]), "aa": aa(runs)}
        duets = [r for r in runs if "mde_other_test" in r]
        if duets:
            entry["duet_runs"] = {"chosen_test": med([r["mde"] for r in duets]),
                                  "other_test": med([r["mde_other_test"] for r in duets])}
        if all(f"if_{d}" in r for r in runs for d in (ALTERNATING, DUET)):
            entry["if_chosen"] = {d: med([r[f"if_{d}"] for r in runs]) for d in (ALTERNATING, DUET)}
        alone = [r["mde_chosen_only"] for r in runs if "mde_chosen_only" in r]
        if alone:
            entry["chosen_rounds_only"] = med(alone)
        out["auto"][k] = entry
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=40, help="trials per scenario and budget")
    parser.add_argument("--budgets", type=int, nargs="*", default=[12, 16, 21],
                        help="budgets, as the alternating rounds they hold at the pool's median round (none: "
                             "only --by-rounds)")
    parser.add_argument("--ks", type=int, nargs="+", default=[2, 3, 4, 6],
                        help="trial rounds of each design (the recorded scenario; the others: the default)")
    parser.add_argument("--unshared", type=float, nargs="*", default=[1.4, 2.0],
                        help="the constructed scenarios' spread factors")
    parser.add_argument("--pool-day", default=POOL_DATE,
                        help=f"the day of the recorded pools, evaluation/results/duet_pool-<design>-<day>.json.gz "
                             f"(default {POOL_DATE})")
    parser.add_argument("--by-rounds", type=int, default=0, metavar="DRAWS",
                        help="first, each fixed design under each test it may have at several round counts "
                             "(median of DRAWS draws)")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = parser.parse_args(argv)
    paths = pool_paths(args.pool_day)
    missing = [str(p) for p in paths.values() if not p.exists()]
    if missing:
        parser.error(f"no pool of that day: {', '.join(missing)} (evaluation/duet_pool.py records one)")
    policy = Policy()
    bar = policy.wall_fdr / ROWS  # wall time's share of the suite's budget (Policy.wall_fdr)
    recorded = {d: Pool(p) for d, p in paths.items()}
    scenarios = {"recorded": recorded}
    for factor in args.unshared:
        scenarios[f"unshared-{factor:g}"] = {ALTERNATING: recorded[ALTERNATING],
                                             DUET: recorded[DUET].unshared(factor, np.random.default_rng(7))}
    round_seconds = {d: float(np.median(p.seconds)) for d, p in recorded.items()}
    print(f"pools: {', '.join(p.name for p in paths.values())}; {len(recorded[DUET].cases)} cases, "
          f"{len(recorded[DUET].seconds)} rounds each; a round {round_seconds[ALTERNATING]:.2f} s alternating, "
          f"{round_seconds[DUET]:.2f} s as a duet; MDE: the verdict's (compare_row, whole rule) at a lone row's "
          f"bar among {ROWS} rows, median of the rows, then of {args.trials} trials")
    result = {"pools": [p.name for p in paths.values()], "trials": args.trials, "bar": bar, "scenarios": {}}
    if args.by_rounds:
        result["by_rounds"] = by_rounds(recorded, policy, bar, args.by_rounds)
        print(f"\n== each fixed design under each test, by rounds (median of {args.by_rounds} draws)")
        for key, mde in result["by_rounds"].items():
            print(f"  {key:28s} {mde:6.2%}")
    for name, pools in scenarios.items():
        ks = args.ks if name == "recorded" else [design_choice.TRIAL_ROUNDS]
        for alternating_rounds in args.budgets:
            budget = alternating_rounds * round_seconds[ALTERNATING]
            started = time.monotonic()
            rng = np.random.default_rng(alternating_rounds)
            trials = [trial(pools, budget, ks, policy, bar, rng, seed, variants=True)
                      for seed in range(args.trials)]
            s = summarise(trials, ks)
            result["scenarios"].setdefault(name, {})[alternating_rounds] = {"budget_seconds": budget, **s}
            print(f"\n== {name}, {budget:.0f} s of rounds ({alternating_rounds} alternating rounds; "
                  f"{time.monotonic() - started:.0f} s)")
            for d in ARMS:
                print(f"  fixed {d:13s}: median MDE {s['fixed'][d]:6.2%} ({s['fixed_rounds'][d]:.0f} rounds; identical "
                      f"code: rows at p <= {AA_LEVEL:g} {s['aa'][d]['p_low']:.1%}, flagged {s['aa'][d]['flagged']})")
            for k, a in s["auto"].items():
                chose = ", ".join(f"{d} {share:.0%}" for d, share in a["chosen"].items())
                print(f"  auto, K={k:<2d}     : median MDE {a['mde']:6.2%} ({a['rounds']:.0f} rounds; chose {chose}); "
                      f"{a['ratio']:.2f}x the better fixed ({s['better']}), per trial {a['trial_ratio']:.2f}x")
                if "if_chosen" in a:
                    print("    after the same trial, had it gone on with each: "
                          + ", ".join(f"{d} {v:.2%}" for d, v in a["if_chosen"].items())
                          + f" (the better {min(a['if_chosen'].values()) / s['fixed'][s['better']]:.2f}x the better "
                            "fixed: the trial's own cost)")
                if "chosen_rounds_only" in a:
                    print(f"    the test on the chosen design's rounds only (the trial's others dropped): "
                          f"{a['chosen_rounds_only']:.2%}")
                if "duet_runs" in a:
                    print(f"    runs that went on in duets (unpaired test {a['tests']['unpaired']:.0%}, paired "
                          f"{a['tests']['paired']:.0%} of all): the test chosen {a['duet_runs']['chosen_test']:.2%}, "
                          f"the other test {a['duet_runs']['other_test']:.2%}")
                print(f"    identical code: rows at p <= {AA_LEVEL:g} {a['aa']['p_low']:.1%} of {a['aa']['rows']}, "
                      f"flagged at the bar {a['aa']['flagged']}")
    if args.out:
        atomic_write_text(args.out, json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
