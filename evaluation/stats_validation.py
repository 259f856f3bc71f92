"""Do the error rates the alert prints hold? Measured on real per-process values, beside asv's rule (issue 31).

The pool is real: fresh worker processes of the example's six dispatch cases,
measured round after round by evaluation/alert_power.py (its arms c5 and c6
run identical measured code; each round runs every arm once, in a shuffled
order). A trial draws n of the pool's rounds for each row of a suite of m rows,
without replacement, and takes one arm's value of each drawn round as the base
and the other's as the head (which arm is which drawn at random per row), so a
row is a real A/A pair of rounds; a known effect multiplies the head's values
(real noise, an exact effect). Each row is then decided by the final analysis
of the alert (sequential.fixed: the whole alpha at one look, Benjamini-Hochberg
at q across the suite's rows, the 2% floor, "unchanged" when the interval lies
inside +-5%), by each of two tests:

    unpaired   stats.compare: the faster-half means, a permutation test, a
               bootstrap percentile interval (what the alert uses)
    paired     paired.compare_paired: the log ratio of each round's two
               processes, Wilcoxon's signed-rank test, its exact interval

and beside them by asv's rule (asv._stats.is_different, Mann-Whitney U at
p < 0.002 on the same per-process values, and a ratio of medians beyond 1.1).

What is printed, for each n:

    A/A            suites with any row flagged (the FDR under no change: <= q)
                   and rows flagged, per suite size m
    +-5% boundary  rows called "unchanged" although they changed by the
                   threshold (stated: <= 1 - confidence, 5%), and how often the
                   interval holds the true ratio (stated: confidence, 95%),
                   with each side's misses (stated: 2.5% each)
    power          a lone row changed by +2/+5/+10% among m: flagged regressed
    MDE            the median minimum detectable effect stated at a lone row's
                   bar in m = 60 rows, and how often fresh rows changed by
                   exactly that much are found (stated: 80%); the same for the
                   normal approximation it replaced
    replaced       the bootstrap percentile interval the inverted test replaced
    round corr.    how much the two processes of a round move together (log
                   scale), and the share of the contrast's variance pairing
                   should then remove: the correlation itself

    python evaluation/stats_validation.py [--pool FILE] [--n 6 10 20 40] [--rows 6 60 500] [--trials 200]
        [--out FILE]

Caveat printed with the figures: draws of n rounds from a pool of R overlap when
n is near R: the rates at n <= R/2 are the trustworthy ones.
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

from torchbench import paired, stats  # noqa: E402
from torchbench.ab.options import Policy  # noqa: E402
from torchbench_core.storage import atomic_write_text  # noqa: E402

POOL = ROOT / "tests" / "data" / "alert_pool_48_rounds.json"
ARMS = ("c5", "c6")  # identical measured code
EFFECTS = (0.02, 0.05, 0.10)
TESTS = ("unpaired", "paired")
ASV_FACTOR, ASV_P = 1.1, 0.002  # asv compare's defaults


def load_pool(path: Path) -> dict[str, np.ndarray]:
    """Per case: an array (rounds, 2) of the two identical arms' values, the rounds where both measured it."""
    pool = json.loads(path.read_text())
    cases: dict[str, list[list[float]]] = {}
    for r in pool["rounds"]:
        arms = [r["arms"][a]["values"] for a in ARMS]
        for key in set(arms[0]) & set(arms[1]):
            cases.setdefault(key, []).append([arms[0][key], arms[1][key]])
    return {k: np.asarray(v) for k, v in sorted(cases.items())}


def round_correlation(cases: dict[str, np.ndarray]) -> dict[str, float]:
    """Pearson's correlation of the log values of a round's two processes, per case."""
    return {k: float(np.corrcoef(np.log(v[:, 0]), np.log(v[:, 1]))[0, 1]) for k, v in cases.items()}


def draw(cases: dict[str, np.ndarray], m: int, n: int, rng) -> list[tuple[np.ndarray, np.ndarray]]:
    """A suite of m A/A rows (case i mod 6), each n rounds of the pool: (base, head) aligned by round."""
    keys = list(cases)
    rows = []
    for i in range(m):
        values = cases[keys[i % len(keys)]]
        picked = values[rng.choice(len(values), n, replace=False)]
        swap = rng.random() < 0.5
        rows.append((picked[:, int(swap)], picked[:, 1 - int(swap)]))
    return rows


def p_value(test: str, base: np.ndarray, head: np.ndarray, bar: float) -> float:
    if test == "paired":
        return paired.signed_rank_p(np.log(head) - np.log(base))
    return stats.permutation_p(base, head, resamples=stats.resamples_for(bar, 1))


def comparison(test: str, base, head, policy: Policy, bar: float) -> stats.Comparison:
    if test == "paired":
        return paired.compare_paired(base, head, confidence=policy.confidence, alpha=bar, power=policy.power)
    return stats.compare(base, head, confidence=policy.confidence, alpha=bar, power=policy.power,
                         resamples=stats.resamples_for(bar, 1))


def replaced(base, head, policy: Policy, bar: float) -> tuple[float, float, float]:
    """The interval and MDE this issue replaced, for comparison: scipy's bootstrap percentile interval of the
    same statistic, and the MDE as z(1 - bar/2) + z(power) bootstrap standard errors (ratio scale)."""
    from scipy import stats as scipy_stats

    b, h = np.log(base), np.log(head)
    boot = scipy_stats.bootstrap((b, h), stats._shift, vectorized=True, n_resamples=5000,
                                 confidence_level=policy.confidence, method="percentile",
                                 random_state=np.random.default_rng(0))
    low, high = boot.confidence_interval
    z = scipy_stats.norm.ppf(1 - bar / 2) + scipy_stats.norm.ppf(policy.power)
    return math.exp(low), math.exp(high), math.expm1(z * boot.standard_error)


def asv_flags(base, head) -> bool:
    """asv compare's rule on the same per-process values: significant and beyond the factor."""
    from asv import _stats

    ratio = float(np.median(head) / np.median(base))
    different = _stats.is_different(list(base), list(head), None, None, p_threshold=ASV_P)
    return different and (ratio > ASV_FACTOR or ratio < 1 / ASV_FACTOR)


def flagged(test: str, rows, policy: Policy) -> int:
    """Rows the final analysis flags (regressed or improved) in one suite: BH over the rows' p-values, then
    stats.classify on those that pass it."""
    bar = policy.fdr / len(rows)
    ps = [p_value(test, b, h, bar) for b, h in rows]
    significant = stats.fdr(ps, policy.fdr)
    out = 0
    for (b, h), sig in zip(rows, significant):
        if sig:
            c = comparison(test, b, h, policy, bar)
            out += stats.classify(c, True, floor=policy.floor, threshold=policy.threshold) in (
                stats.REGRESSED, stats.IMPROVED)
    return out


def aa(cases, n: int, m: int, trials: int, policy: Policy, rng) -> dict:
    any_flag = {t: 0 for t in (*TESTS, "asv")}
    rows_flagged = dict.fromkeys(any_flag, 0)
    for _ in range(trials):
        rows = draw(cases, m, n, rng)
        for test in TESTS:
            k = flagged(test, rows, policy)
            any_flag[test] += k > 0
            rows_flagged[test] += k
        k = sum(asv_flags(b, h) for b, h in rows)
        any_flag["asv"] += k > 0
        rows_flagged["asv"] += k
    return {t: {"suites_flagged": any_flag[t] / trials, "rows_flagged": rows_flagged[t] / (trials * m)}
            for t in any_flag}


def boundary(cases, n: int, trials: int, policy: Policy, rng) -> dict:
    """Rows changed by exactly the threshold (half up, half down): wrongly 'unchanged', interval coverage;
    also the replaced bootstrap interval's coverage on the same draws."""
    out = {test: {"unchanged": 0, "below": 0, "above": 0} for test in (*TESTS, "replaced")}
    for t in range(trials):
        (b, h), = draw(cases, 1, n, rng)
        factor = (1 + policy.threshold) if t % 2 == 0 else 1 / (1 + policy.threshold)
        intervals = {}
        for test in TESTS:
            c = comparison(test, b, h * factor, policy, policy.fdr)
            intervals[test] = (c.ci_low, c.ci_high)
        intervals["replaced"] = replaced(b, h * factor, policy, policy.fdr)[:2]
        for test, (low, high) in intervals.items():
            out[test]["unchanged"] += 1 / (1 + policy.threshold) <= low and high <= 1 + policy.threshold
            out[test]["below"] += high < factor  # the interval lies below the true ratio
            out[test]["above"] += low > factor
    return {test: {"unchanged": f["unchanged"] / trials, "coverage": 1 - (f["below"] + f["above"]) / trials,
                   "below": f["below"] / trials, "above": f["above"] / trials} for test, f in out.items()}


def power(cases, n: int, rows: list[int], trials: int, policy: Policy, rng) -> tuple[dict, dict]:
    """A lone changed row among m: regressed when its p-value reaches q/m (BH's bar for a lone change), the
    floor is cleared and the interval excludes 1. Then the MDE check at m = 60: the median MDE stated on
    unchanged rows, and how often fresh rows changed by exactly that much are found (stated: policy.power);
    the replaced MDE (normal approximation) checked the same way."""
    out = {test: {} for test in (*TESTS, "asv")}
    smallest = policy.fdr / max(rows)
    for effect in EFFECTS:
        hits = {test: {m: 0 for m in rows} for test in TESTS}
        asv_hits = 0
        for _ in range(trials):
            (b, h), = draw(cases, 1, n, rng)
            h = h * (1 + effect)
            for test in TESTS:
                c = comparison(test, b, h, policy, smallest)  # its p-value resolved down to the smallest bar
                for m in rows:
                    hits[test][m] += stats.classify(c, c.p_value <= policy.fdr / m, floor=policy.floor,
                                                    threshold=policy.threshold) == stats.REGRESSED
            asv_hits += asv_flags(b, h)
        for test in TESTS:
            out[test][f"+{effect:.0%}"] = {str(m): hits[test][m] / trials for m in rows}
        out["asv"][f"+{effect:.0%}"] = asv_hits / trials
    bar = policy.fdr / 60
    stated = {test: [] for test in (*TESTS, "replaced")}
    for _ in range(max(10, trials // 4)):
        (b, h), = draw(cases, 1, n, rng)
        for test in TESTS:
            stated[test].append(comparison(test, b, h, policy, bar).mde)
        stated["replaced"].append(replaced(b, h, policy, bar)[2])
    check = {}
    for name, mdes in stated.items():
        mde = float(np.median(mdes))
        test = "unpaired" if name == "replaced" else name
        found = 0
        if math.isfinite(mde):
            for _ in range(trials):
                (b, h), = draw(cases, 1, n, rng)
                found += p_value(test, b, h * (1 + mde), bar) <= bar
        check[name] = {"mde": mde, "found": found / trials if math.isfinite(mde) else None}
    return out, check


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool", type=Path, default=POOL)
    parser.add_argument("--n", type=int, nargs="+", default=[6, 10, 20, 40], help="processes a side")
    parser.add_argument("--rows", type=int, nargs="+", default=[6, 60, 500], help="suite sizes")
    parser.add_argument("--trials", type=int, default=200, help="trials per figure (A/A suites: fewer for big m)")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = parser.parse_args(argv)
    policy = Policy()
    cases = load_pool(args.pool)
    rounds = min(len(v) for v in cases.values())
    rng = np.random.default_rng(0)
    corr = round_correlation(cases)
    print(f"pool: {args.pool.name}, {len(cases)} cases, {rounds} rounds of two identical arms; policy: q={policy.fdr}, "
          f"floor {policy.floor:.0%}, threshold +-{policy.threshold:.0%}, confidence {policy.confidence:.0%}")
    print("round correlation (log values of a round's two processes): "
          + ", ".join(f"{k.rsplit('|', 1)[-1]}: {v:+.2f}" for k, v in corr.items())
          + f"; pairing would remove about that share of the contrast's variance (median {np.median(list(corr.values())):+.2f})")
    result = {"pool": str(args.pool.name), "rounds": rounds, "correlation": corr, "policy": policy.__dict__,
              "by_n": {}}
    for n in args.n:
        if n > rounds:
            continue
        started = time.monotonic()
        figures = {"aa": {m: aa(cases, n, m, max(4, args.trials * 6 // m), policy, rng) for m in args.rows},
                   "boundary": boundary(cases, n, args.trials, policy, rng)}
        figures["power"], figures["mde"] = power(cases, n, args.rows, args.trials, policy, rng)
        result["by_n"][n] = figures
        print(f"\n== n = {n} processes a side ({time.monotonic() - started:.0f} s)")
        for m, f in figures["aa"].items():
            print(f"  A/A, {m} rows: suites with a flag (stated <= {policy.fdr:.0%}): "
                  + ", ".join(f"{t} {f[t]['suites_flagged']:.1%}" for t in TESTS)
                  + f"; rows flagged by asv's rule {f['asv']['rows_flagged']:.1%}")
        for test in (*TESTS, "replaced"):
            b = figures["boundary"][test]
            print(f"  +-{policy.threshold:.0%} boundary, {test}: 'unchanged' {b['unchanged']:.1%} (stated <= "
                  f"{1 - policy.confidence:.0%}); coverage {b['coverage']:.1%} (stated {policy.confidence:.0%}; "
                  f"misses below {b['below']:.1%}, above {b['above']:.1%})")
        for test in TESTS:
            print(f"  power, {test} (found at m rows): " + "; ".join(
                f"{e} " + " ".join(f"{v:.0%}@{m}" for m, v in by_m.items())
                for e, by_m in figures["power"][test].items()))
        for name, f in figures["mde"].items():
            found = "-" if f["found"] is None else f"{f['found']:.0%}"
            print(f"  MDE at 60 rows, {name}: median stated {f['mde']:.1%}; fresh rows changed by it found "
                  f"{found} (stated {policy.power:.0%})")
        print("  power, asv's rule (no multiplicity): "
              + ", ".join(f"{e} {v:.0%}" for e, v in figures["power"]["asv"].items()))
    print(f"\ncaveat: draws of n rounds from a pool of {rounds} overlap when n is near {rounds}; "
          f"rates at n <= {rounds // 2} are the trustworthy ones")
    if args.out:
        atomic_write_text(args.out, json.dumps(result, indent=1, default=float))
    return result


if __name__ == "__main__":
    main()
