"""The alert's decision at suite scale, on real per-process values: false alerts and a lone regression's
detection as the suite grows, beside the old fixed-floor permutation test, measured in the same run.

Each synthetic suite has M rows. Every row draws its base and head processes (20 a side by default) from
one real case's per-process values of identical code (tests/data/alert_pool_12_rounds.json, or a bigger
pool of evaluation/alert_power.py with --pool): exchangeable, as alternation makes them. In the "lone"
suites, row 0's head processes are scaled by 1 + effect: a known effect on real noise. Both deciders run
the same verdict code (torchbench.ab.verdict.decide, default policy, no counts):

    ours    the permutation p-value as it is now: exact up to 8 processes a side, else sequential Monte
            Carlo with as many draws as the suite's size needs (stats.resamples_for)
    anchor  the same with the number of draws fixed at stats.RESAMPLES (20,000: a p-value floor of 1e-4),
            the alert as it was

    python evaluation/suite_scale.py [--sizes 6 60 118 500] [--effects 0.05 0.1 0.5] [--suites 10]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from unittest import mock

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from torchbench import stats  # noqa: E402
from torchbench.ab.evidence import Evidence, JobInfo  # noqa: E402
from torchbench.ab.options import Policy  # noqa: E402
from torchbench.ab.verdict import decide  # noqa: E402

POOL = ROOT / "tests" / "data" / "alert_pool_12_rounds.json"
FLAGGED = (stats.REGRESSED, stats.IMPROVED)


def real_values(pool_file: Path) -> list[np.ndarray]:
    """Each case's per-process values from the pool's two identical arms (commits 5 and 6)."""
    pool = json.loads(pool_file.read_text())
    values: dict[str, list[float]] = {}
    for r in pool["rounds"]:
        for arm in ("c5", "c6"):
            for key, v in r["arms"][arm]["values"].items():
                values.setdefault(key, []).append(v)
    return [np.asarray(v) for _, v in sorted(values.items())]


def suite(cases: list[np.ndarray], rows: int, effect: float | None, rng, processes: int) -> Evidence:
    evidence = Evidence()
    for i in range(rows):
        job = (f"bench.case_{i:03d}", 0)
        evidence.jobs[job] = JobInfo(job[0], unit="seconds", on_base=True, on_head=True)
        values = cases[i % len(cases)]
        base, head = rng.choice(values, processes), rng.choice(values, processes)
        if i == 0 and effect:
            head = head * (1 + effect)
        evidence.values["base"][job], evidence.values["head"][job] = list(base), list(head)
    return evidence


def run(decider: str, evidence: Evidence) -> tuple[list, float]:
    start = time.perf_counter()
    if decider == "anchor":
        with mock.patch.object(stats, "resamples_for", lambda q, m: stats.RESAMPLES):
            verdicts = decide(evidence, Policy())
    else:
        verdicts = decide(evidence, Policy())
    return verdicts, time.perf_counter() - start


def aa_outcome(pool_file: Path, n: int, suites: int, rows: int, checked: int, rng) -> dict:
    """Issue 51: how often an A/A suite of `rows` rows (n processes a side, drawn without replacement from a
    case's values of both identical arms) is held back from "no regression" by the slower-half check:
    before, each row tested at p <= 1 - confidence (5%) alone; now Benjamini-Hochberg at 1 - confidence across
    the suite's rows (contrast.slow_halves), each with the threshold's size. On the first `checked` suites
    also the whole verdict with its intervals (verdict.decide): the share of suites whose every row's
    interval fits +-threshold, and of those, the share ending no regression (every row unchanged)."""
    from torchbench.ab import contrast

    policy = Policy()
    values = real_values(pool_file)
    resamples = stats.resamples_for(1 - policy.confidence, rows)
    held_before = held_now = 0
    all_within = ended_clean = 0
    for s in range(suites):
        evidence = Evidence()
        ps, ratios = [], []
        for i in range(rows):
            job = (f"bench.case_{i:03d}", 0)
            evidence.jobs[job] = JobInfo(job[0], unit="seconds", on_base=True, on_head=True)
            v = values[i % len(values)]
            picked = v[rng.choice(len(v), 2 * n, replace=False)]
            evidence.values["base"][job], evidence.values["head"][job] = list(picked[:n]), list(picked[n:])
            ratio, p = stats.slower_half(picked[:n], picked[n:], resamples=resamples)
            ps.append(p)
            ratios.append(ratio)
        big = np.abs(np.asarray(ratios) - 1) >= policy.threshold
        held_before += bool(np.any((np.asarray(ps) <= 1 - policy.confidence) & big))
        held_now += bool(np.any(np.asarray(stats.fdr(ps, 1 - policy.confidence)) & big))
        if s < checked:
            evidence.rounds = n
            with mock.patch.object(contrast, "compare_row", _without_mde(contrast.compare_row)):
                verdicts = decide(evidence, policy)
            within = all(stats.within(v.comparison, policy.threshold) for v in verdicts)
            all_within += within
            ended_clean += within and all(v.status == stats.UNCHANGED for v in verdicts)
    return {"n": n, "rows": rows, "suites": suites, "held_before": held_before / suites,
            "held_now": held_now / suites, "checked": checked, "all_within": all_within,
            "no_regression_of_all_within": ended_clean / all_within if all_within else None}


def vectorised_aa(suites: int, sizes: list[int], seed: int) -> list[dict]:
    """The A/A rate of whole suites as tests/test_error_rates.py asserts it (its functions: 8 processes a side
    from the 48-round pool, exact permutation p-values of every row at once, Benjamini-Hochberg at q, then the
    floor and the interval): suites with any row flagged, and with any row at p <= q (no multiplicity control)."""
    sys.path.insert(0, str(ROOT / "tests"))
    import test_error_rates as t

    cases = real_values(t.POOL)
    policy, weights, out = Policy(), t.rank_weights(t.N), []
    for m in sizes:
        base, head = t.draw_rows(cases, suites * m, np.random.default_rng(seed + m))
        p = t.suite_p(base, head, weights, policy.fdr)
        flagged = uncorrected = 0
        for k in range(suites):
            rows = slice(k * m, (k + 1) * m)
            significant = np.asarray(stats.fdr(list(p[rows]), policy.fdr))
            flagged += t.flagged(base[rows], head[rows], p[rows], policy, significant) > 0
            uncorrected += bool(np.any(p[rows] <= policy.fdr))
        out.append({"rows": m, "suites": suites, "flagged": flagged, "uncorrected": uncorrected})
    return out


def _without_mde(compare_row):
    """compare_row without the MDE (the outcome does not depend on it; it costs as much as the rest)."""
    def wrapped(*a, **k):
        k["with_mde"] = False
        return compare_row(*a, **k)
    return wrapped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool", type=Path, default=POOL)
    parser.add_argument("--sizes", type=int, nargs="+", default=[6, 60, 118, 500])
    parser.add_argument("--effects", type=float, nargs="+", default=[0.05, 0.1, 0.5])
    parser.add_argument("--suites", type=int, default=10, help="suites per size and effect")
    parser.add_argument("--processes", type=int, default=20, help="processes a side")
    parser.add_argument("--aa-outcome", type=int, nargs="*", default=None, metavar="N",
                        help="issue 51: A/A suites of --sizes[0] rows at N processes a side held back from 'no "
                             "regression' by the slower-half check, before and now (--suites of them)")
    parser.add_argument("--checked", type=int, default=10, help="with --aa-outcome: suites decided in full")
    parser.add_argument("--out", type=Path, default=None, help="with --aa-outcome: write the figures as JSON")
    parser.add_argument("--vectorised-aa", type=int, default=None, metavar="SUITES",
                        help="issue 51: the A/A rate of SUITES suites of each --sizes as tests/test_error_rates.py "
                             "asserts it")
    args = parser.parse_args()
    if args.vectorised_aa is not None:
        for f in vectorised_aa(args.vectorised_aa, args.sizes, 1):
            print(f"{f['rows']} rows, 8 a side, {f['suites']} A/A suites: any row flagged by the verdict "
                  f"{f['flagged']} ({f['flagged'] / f['suites']:.2%}; stated <= 1%); any row at p <= q with no "
                  f"multiplicity control {f['uncorrected']} ({f['uncorrected'] / f['suites']:.1%})", flush=True)
        return
    if args.aa_outcome is not None:
        found = []
        for n in args.aa_outcome:
            f = aa_outcome(args.pool, n, args.suites, args.sizes[0], args.checked, np.random.default_rng(n))
            found.append(f)
            clean = f["no_regression_of_all_within"]
            print(f"{f['rows']} rows, {n} a side, {f['suites']} A/A suites: held back by the slower-half check "
                  f"before {f['held_before']:.1%}, now {f['held_now']:.1%}; of {f['checked']} decided in full, "
                  f"{f['all_within']} had every interval within +-5%, of which "
                  f"{'-' if clean is None else f'{clean:.0%}'} ended no regression", flush=True)
        if args.out:
            args.out.write_text(json.dumps(found, indent=1))
        return
    cases = real_values(args.pool)
    print(f"pool: {args.pool.name}, {len(cases)} cases, {len(cases[0])} processes each; {args.processes} a side")
    print(f"{'rows':>5} {'suite':>10} {'decider':>7} {'A/A rows flagged':>17} {'lone row found':>15} "
          f"{'other rows flagged':>19} {'s / decision':>13} {'median MDE':>11}")
    for m in args.sizes:
        for effect in [None, *args.effects]:
            for decider in ("ours", "anchor"):
                rng = np.random.default_rng(1000 * m + int(1000 * (effect or 0)))
                flagged = found = others = 0
                seconds, mde = [], []
                for _ in range(args.suites):
                    verdicts, s = run(decider, suite(cases, m, effect, rng, args.processes))
                    seconds.append(s)
                    mde += [v.comparison.mde for v in verdicts if v.comparison]
                    by = {v.benchmark: v for v in verdicts}
                    lone = by["bench.case_000"]
                    rest = [v for b, v in by.items() if b != "bench.case_000"]
                    if effect is None:
                        flagged += sum(v.status in FLAGGED for v in verdicts)
                    else:
                        found += lone.status == stats.REGRESSED
                        others += sum(v.status in FLAGGED for v in rest)
                kind = "A/A" if effect is None else f"+{effect:.0%} lone"
                aa = f"{flagged}/{m * args.suites}" if effect is None else "-"
                lone_text = "-" if effect is None else f"{found}/{args.suites}"
                other_text = "-" if effect is None else f"{others}/{(m - 1) * args.suites}"
                print(f"{m:5d} {kind:>10} {decider:>7} {aa:>17} {lone_text:>15} {other_text:>19} "
                      f"{np.median(seconds):13.2f} {np.median(mde):11.1%}", flush=True)


if __name__ == "__main__":
    main()
