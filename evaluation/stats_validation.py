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
    pairing        what pairing removes, measured like for like: the paired
                   test's MDE (the change found on 80% of fresh draws, at a
                   lone row's bar in 60 rows) on rounds kept whole and on the
                   pool's rounds broken apart, per case, the variance cut
                   1 - (kept / broken)^2 beside the correlation's 95% interval;
                   and, measured the same way, the paired test against the
                   alert's unpaired one (which also changes the statistic)
    counts         instruction counts of identical code (a second pool,
                   evaluation/counts_pool.py: valgrind processes of three
                   commits that change nothing the suite runs, and one commit
                   under two torch builds): how much counts differ between
                   processes of a commit and between the commits, and the
                   rows the alert's counts rule decides
                   (every one false) over every way of taking two processes a
                   side; between builds, the rows counts would decide were
                   they not advisory, and those decided

    python evaluation/stats_validation.py [--pool FILE] [--n 6 10 20 40] [--rows 6 60 500] [--trials 200]
        [--counts-pool FILE|none] [--out FILE]

Caveat printed with the figures: draws of n rounds from a pool of R overlap when
n is near R: the rates at n <= R/2 are the trustworthy ones.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from torchbench import paired, stats  # noqa: E402
from torchbench.ab.counts import COMPUTE, count_change  # noqa: E402
from torchbench.ab.evidence import Evidence  # noqa: E402
from torchbench.ab.options import Policy  # noqa: E402
from torchbench_core.storage import atomic_write_text  # noqa: E402
from torchbench.ab.count_decision import COUNT_ALPHA

POOL = ROOT / "tests" / "data" / "alert_pool_48_rounds.json"
COUNTS_POOL = ROOT / "tests" / "data" / "counts_pool_69_rows.json"
ARMS = ("c5", "c6")  # identical measured code
EFFECTS = (0.02, 0.05, 0.10)
TESTS = ("unpaired", "paired")
ASV_FACTOR, ASV_P = 1.1, 0.002  # asv compare's defaults
DETECT_TOP = math.log(1.3)  # the largest change a measured MDE looks for


def read_pool(path: Path) -> dict:
    """A pool as alert_power.py or duet_pool.py writes it, or gzipped as evaluation/results keeps them."""
    return json.loads(gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_text())


def load_pool(path: Path) -> dict[str, np.ndarray]:
    """Per case: an array (rounds, 2) of the two identical arms' values, the rounds where both measured it."""
    return pool_cases(read_pool(path))


def pool_cases(pool: dict) -> dict[str, np.ndarray]:
    """load_pool's cases, from a pool already read (read_pool)."""
    cases: dict[str, list[list[float]]] = {}
    for r in pool["rounds"]:
        arms = [r["arms"][a]["values"] for a in ARMS]
        for key in set(arms[0]) & set(arms[1]):
            cases.setdefault(key, []).append([arms[0][key], arms[1][key]])
    return {k: np.asarray(v) for k, v in sorted(cases.items())}


def round_correlation(cases: dict[str, np.ndarray]) -> dict[str, float]:
    """Pearson's correlation of the log values of a round's two processes, per case."""
    return {k: float(np.corrcoef(np.log(v[:, 0]), np.log(v[:, 1]))[0, 1]) for k, v in cases.items()}


def correlation_intervals(cases: dict[str, np.ndarray], confidence: float) -> dict[str, tuple[float, float]]:
    """Each case's round correlation's interval (Fisher's z, scipy's pearsonr): how well the pool pins the
    cut that pairing is predicted to make."""
    from scipy import stats as scipy_stats

    out = {}
    for k, v in cases.items():
        ci = scipy_stats.pearsonr(np.log(v[:, 0]), np.log(v[:, 1])).confidence_interval(confidence)
        out[k] = (float(ci.low), float(ci.high))
    return out


def detection_shift(p_at, bar: float) -> float:
    """The smallest multiplicative change (log scale, to 1/1024 of the range) that one draw's test reaches
    the bar at, by bisection over shifts of its head (p falls as the shift grows); inf beyond +30%."""
    low, high = 0.0, DETECT_TOP
    if p_at(high) > bar:
        return math.inf
    while high - low > DETECT_TOP / 1024:
        mid = (low + high) / 2
        low, high = (low, mid) if p_at(mid) <= bar else (mid, high)
    return high


def measured_mde(shifts: list[float], power: float) -> float:
    """The change found with probability `power` on fresh draws: that quantile of the draws' detection
    shifts (ratio scale), inf where more than 1 - power of them never reach the bar."""
    return math.expm1(float(np.quantile(np.asarray(shifts), power, method="higher")))


def pairing(cases, n: int, trials: int, policy: Policy, rng, unpaired_trials: int | None = None) -> dict:
    """What pairing itself buys, like for like: the same test (signed-rank on each pair's log ratio) on rounds
    kept whole, and on the same pool's rounds broken apart (base and head from different rounds, so nothing
    is shared). Its measured MDE at a lone row's bar in 60 rows (the change found on 80% of fresh draws), per
    case; the variance cut is 1 - (kept / broken)**2 and the round correlation predicts it. Beside it, the
    alert's unpaired test (faster halves) on the rounds kept, over all cases: the paired test against it
    also changes the statistic, not only the pairing (`unpaired_trials` draws of it in all, `trials` if None:
    its permutation p-values cost most of the time)."""
    bar = policy.fdr / 60
    resamples = stats.resamples_for(bar, 1)
    by_case, unpaired_shifts, kept_all = {}, [], []
    for key, values in cases.items():
        shifts = {"kept": [], "broken": []}
        for t in range(trials):
            rounds = rng.choice(len(values), 2 * n, replace=False)
            a = int(rng.random() < 0.5)
            whole = values[rounds[:n], a], values[rounds[:n], 1 - a]
            for way, (b, h) in {"kept": whole, "broken": (values[rounds[:n], a], values[rounds[n:], 1 - a])}.items():
                d = np.log(h) - np.log(b)
                shifts[way].append(detection_shift(lambda s: paired.signed_rank_p(d + s), bar))
            if t < -(-(unpaired_trials or trials) // len(cases)):  # the alert's test: shared by the cases
                b, h = whole
                unpaired_shifts.append(detection_shift(
                    lambda s: stats.permutation_p(b, h * math.exp(s), resamples=resamples), bar))
        kept_all += shifts["kept"]
        kept, broken = (measured_mde(shifts[w], policy.power) for w in ("kept", "broken"))
        by_case[key] = {"kept": kept, "broken": broken,
                        "cut": 1 - (kept / broken) ** 2 if math.isfinite(broken) else math.nan}
    return {"cases": by_case, "paired": measured_mde(kept_all, policy.power),
            "unpaired": measured_mde(unpaired_shifts, policy.power)}


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


def comparison(test: str, base, head, policy: Policy, bar: float, excess=None, with_mde: bool = True,
               floor: float | None = None, noise: stats.SuiteNoise | None = None) -> stats.Comparison:
    """The row's comparison as the alert makes it: its MDE that of the verdict's whole rule (the floor
    included: policy.floor unless `floor` says otherwise; 0 gives the test's MDE alone, as before issue 51),
    held to the suite's slow processes (`excess`), and with `noise` (stats.SuiteNoise: what the alert passes)
    also to the rule simulated from the suite's processes."""
    floor = policy.floor if floor is None else floor
    if test == "paired":
        return paired.compare_paired(base, head, confidence=policy.confidence, alpha=bar, power=policy.power,
                                     with_mde=with_mde, floor=floor)
    return stats.compare(base, head, confidence=policy.confidence, alpha=bar, power=policy.power,
                         resamples=stats.resamples_for(bar, 1), excess=excess, with_mde=with_mde, floor=floor,
                         noise=noise)


def found_by_rule(test: str, base, head, policy: Policy, bar: float) -> bool:
    """Is this row flagged regressed by the verdict's whole rule: stats.classify with the test significant at
    `bar` (a lone change's Benjamini-Hochberg bar), the floor and the interval (issue 51: before, a row
    counted as found on p <= bar alone, which is the test's power, not the verdict's)."""
    c = comparison(test, base, head, policy, bar, with_mde=False)
    return stats.classify(c, c.p_value <= bar, floor=policy.floor, threshold=policy.threshold) == stats.REGRESSED


def fresh_cases(pool: dict[str, np.ndarray], rounds: int, rng, quiet: float | None = None) -> dict[str, np.ndarray]:
    """Synthetic draws with this machine's slow tail: per case, `rounds` rounds of two arms, each value the
    case's fast level times a log-normal fast-group spread (the pool's faster half: its standard deviation)
    times, with the pool's share of slow processes, an excess drawn from the pool's own excesses beyond the
    fast group (log values more than 3 spreads above the median of the faster half). `quiet`: instead, a
    log-normal spread of that size and no slow processes (the quiet rows where the floor binds)."""
    out = {}
    for key, values in pool.items():
        x = np.sort(np.log(values.ravel()))
        fast = x[: len(x) // 2]
        centre, sd = float(np.median(fast)), float(np.std(fast, ddof=1))
        excess = x - centre
        slow = excess[excess > 3 * sd]
        share = len(slow) / len(x)
        if quiet is not None:
            sd, share = quiet, 0.0
        size = (rounds, 2)
        logs = centre + rng.normal(0, sd, size)
        slowed = rng.random(size) < share
        if len(slow):
            logs[slowed] += rng.choice(slow, int(slowed.sum()))
        out[key] = np.exp(logs)
    return out


def rule_mde(cases, n: int, trials: int, policy: Policy, rng, suites: int = 9) -> dict:
    """The stated MDE of the verdict's whole rule at a lone row's bar in 60 rows, as the alert states it (held
    to the suite's slow processes, and simulated from the suite's processes where the bar is thin:
    stats.SuiteNoise), the median over `suites` suites' first rows, and how often fresh rows changed by exactly
    that much are flagged by the rule (stated: policy.power), and by the test alone (p <= bar); beside it the
    MDE as stated before the simulation ("unsimulated": the relabellings held to the slow processes alone),
    found by the same rule. Fresh rows are drawn once per distinct MDE."""
    bar = policy.fdr / 60
    new, old = [], []
    for _ in range(suites):
        suite = draw(cases, 60, n, rng)
        noise = stats.SuiteNoise(suite)
        b, h = suite[0]
        new.append(comparison("unpaired", b, h, policy, bar, noise=noise).mde)
        old.append(comparison("unpaired", b, h, policy, bar, noise.excess).mde)
    out = {"n": n, "bar": bar, "stated": {"rule": new, "unsimulated": old}}
    measured = {}
    for name, mdes in (("rule", new), ("unsimulated", old)):
        mde = float(np.median(mdes))
        if mde in measured:
            out[name] = measured[mde]
            continue
        found = alone = 0
        if math.isfinite(mde):
            for _ in range(trials):
                (b, h), = draw(cases, 1, n, rng)
                c = comparison("unpaired", b, h * (1 + mde), policy, bar, with_mde=False)
                found += stats.classify(c, c.p_value <= bar, floor=policy.floor,
                                        threshold=policy.threshold) == stats.REGRESSED
                alone += c.p_value <= bar
        out[name] = measured[mde] = {"mde": mde, "found": found / trials if math.isfinite(mde) else None,
                                     "test_alone": alone / trials if math.isfinite(mde) else None,
                                     "trials": trials}
    return out


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
    stated = {test: [] for test in (*TESTS, "held", "replaced")}
    for _ in range(max(10, trials // 4)):
        # the alert reads the slow processes from its whole suite (here 60 rows of n a side) and states the
        # first row's MDE held to them and to the rule simulated from them ("held": stats.SuiteNoise);
        # "unpaired" is the MDE read from the relabellings alone
        suite = draw(cases, 60, n, rng)
        (b, h) = suite[0]
        for test in TESTS:
            stated[test].append(comparison(test, b, h, policy, bar).mde)
        stated["held"].append(comparison("unpaired", b, h, policy, bar, noise=stats.SuiteNoise(suite)).mde)
        stated["replaced"].append(replaced(b, h, policy, bar)[2])
    check = {}
    for name, mdes in stated.items():
        mde = float(np.median(mdes))
        test = "unpaired" if name in ("replaced", "held") else name
        found = 0
        if math.isfinite(mde):
            for _ in range(trials):
                (b, h), = draw(cases, 1, n, rng)
                found += found_by_rule(test, b, h * (1 + mde), policy, bar)
        check[name] = {"mde": mde, "found": found / trials if math.isfinite(mde) else None}
    return out, check


def job_of(key: str) -> tuple[str, int]:
    """A pool's "name|index" key as the alert's job."""
    name, index = key.rsplit("|", 1)
    return name, int(index)


def _counts_evidence(base: list[dict], head: list[dict], keys: list[str], builds_differ: str = "") -> Evidence:
    """Evidence holding these valgrind processes' counts ({row: repeats} each): the first process a side as
    evidence.counts, a second as evidence.counts_again."""
    evidence = Evidence(builds_differ=builds_differ)
    for side, processes in (("base", base), ("head", head)):
        for store, process in zip((evidence.counts, evidence.counts_again), processes):
            for key in keys:
                store[side][job_of(key)] = process[key]
    return evidence


def counts_replay(path: Path, policy: Policy) -> dict:
    """The counts rule (counts.count_change) replayed on a recorded pool of identical code
    (evaluation/counts_pool.py): every way to take two valgrind processes a side from two commits' processes
    (disjoint where it is one commit), each row decided by counts or not; then the two torch builds."""
    pool = json.loads(path.read_text())
    processes = pool["processes"]
    keys = sorted(set.intersection(*(set(p) for arm in processes.values() for p in arm)))
    jobs = [job_of(k) for k in keys]
    def spread(medians: np.ndarray) -> np.ndarray:  # per row: (largest - smallest) / smallest
        return (medians.max(axis=0) - medians.min(axis=0)) / medians.min(axis=0)

    by_arm = {arm: np.array([[np.median(p[k]) for k in keys] for p in ps]) for arm, ps in processes.items()}
    within_commit = np.max([spread(m) for m in by_arm.values()], axis=0)
    between_commits = {arm: np.abs(by_arm[arm][0] / by_arm[first][0] - 1) for first in [sorted(by_arm)[0]]
                       for arm in sorted(by_arm)[1:]}
    within = np.array([max((max(p[k]) - min(p[k])) / np.median(p[k]) for arm in processes.values() for p in arm)
                       for k in keys])
    draws, decided, pending, labelled = 0, 0, 0, 0
    arms = sorted(processes)
    for i, x in enumerate(arms):
        for y in arms[i:]:
            for bx in itertools.combinations(range(len(processes[x])), 2):
                for hy in itertools.combinations(range(len(processes[y])), 2):
                    if x == y and (set(bx) & set(hy) or bx > hy):
                        continue  # one commit: disjoint processes, each split once
                    evidence = _counts_evidence([processes[x][j] for j in bx], [processes[y][j] for j in hy], keys)
                    one = _counts_evidence([processes[x][bx[0]]], [processes[y][hy[0]]], keys)
                    draws += 1
                    for job in jobs:
                        change = count_change(evidence, job, policy.count_floor, COUNT_ALPHA)
                        decided += change.decides
                        labelled += change.label == COMPUTE
                        pending += count_change(one, job, policy.count_floor, COUNT_ALPHA).pending
    result = {"pool": path.name, "rows": len(keys), "processes": {a: len(p) for a, p in processes.items()},
              "rows_differing_between_processes": int((within_commit > 0).sum()),
              "between_processes_max": float(within_commit.max()),
              "between_commits": {f"{arm} vs {sorted(by_arm)[0]}": {"rows_differing": int((d > 0).sum()),
                                                                     "max": float(d.max())}
                                  for arm, d in between_commits.items()},
              "within_median": float(np.median(within)), "within_max": float(within.max()),
              "suites": draws, "row_draws": draws * len(keys), "decided": decided, "one_process_decided": pending,
              "labelled_compute": labelled}
    builds = pool.get("builds") or {}
    if len(builds) == 2:
        (a, base), (b, head) = sorted(builds.items())
        common = sorted(set(base) & set(head))
        jobs_b = [job_of(k) for k in common]
        advisory = _counts_evidence([base], [head], common, builds_differ=f"torch {a} vs {b}")
        plain = _counts_evidence([base], [head], common)
        deltas = [count_change(plain, job, policy.count_floor, COUNT_ALPHA).delta for job in jobs_b]
        result["builds"] = {
            "releases": [a, b], "rows": len(common),
            "moved_beyond_floor": sum(count_change(plain, job, policy.count_floor, COUNT_ALPHA).pending for job in jobs_b),
            "decided": sum(count_change(advisory, job, policy.count_floor, COUNT_ALPHA).decides for job in jobs_b),
            "median_abs_delta": float(np.median(np.abs(deltas))), "max_abs_delta": float(np.max(np.abs(deltas)))}
    return result


def print_counts(c: dict) -> None:
    print(f"\n== instruction counts of identical code ({c['pool']}: {c['rows']} rows; valgrind processes per commit "
          + ", ".join(f"{a} {n}" for a, n in c["processes"].items()) + ")")
    print(f"  between valgrind processes of one commit: rows whose median differs {c['rows_differing_between_processes']}"
          f" of {c['rows']} (largest {c['between_processes_max']:.3%}); between commits: " + "; ".join(
              f"{pair} {d['rows_differing']} rows (largest {d['max']:.3%})" for pair, d in c["between_commits"].items())
          + f"; the repeats' spread inside a process: median {c['within_median']:.3%}, largest {c['within_max']:.3%}")
    print(f"  A/A, the alert's rule (two valgrind processes a side): rows decided by counts {c['decided']} of "
          f"{c['row_draws']} row draws in {c['suites']} suite draws (every one false); labelled compute "
          f"{c['labelled_compute']}; the one-process rule it replaced: {c['one_process_decided']}")
    b = c.get("builds")
    if b:
        print(f"  between builds (torch {b['releases'][0]} vs {b['releases'][1]}, the same code): counts moved "
              f"beyond their margin and the {Policy().count_floor:.0%} floor in {b['moved_beyond_floor']} of {b['rows']} "
              f"rows (|change| median {b['median_abs_delta']:.2%}, largest {b['max_abs_delta']:.2%}): what counts "
              f"would decide if they were not advisory; decided now {b['decided']}")


def print_pairing(f: dict, corr: dict[str, float], intervals: dict[str, tuple[float, float]],
                  policy: Policy) -> None:
    """Pairing's measured variance cut per case beside the cut its round correlation predicts, and the
    paired test against the alert's unpaired one."""
    def pct(x: float) -> str:
        return f"{x:.1%}" if math.isfinite(x) else f"beyond {math.expm1(DETECT_TOP):.0%}"

    print("  pairing, like for like (the signed-rank test on rounds kept / broken apart; measured MDE at a lone "
          f"row's bar in 60 rows, found on {policy.power:.0%} of fresh draws; variance cut; predicted by the "
          "round correlation, 95% interval):")
    at_least = inside = 0
    measured = [key for key, c in f["cases"].items() if math.isfinite(c["kept"]) and math.isfinite(c["broken"])]
    for key, c in f["cases"].items():
        low, high = intervals[key]
        at_least += key in measured and c["cut"] >= corr[key]
        inside += key in measured and c["cut"] >= low
        cut = f"cut {c['cut']:.0%}" if key in measured else "no cut measured"
        print(f"    case {key.rsplit('|', 1)[-1]}: {pct(c['kept'])} / {pct(c['broken'])}, {cut}; "
              f"predicted {corr[key]:.0%} [{low:.0%}, {high:.0%}]")
    if measured:
        print(f"    cut at least the predicted in {at_least} of {len(measured)} cases measured (of {len(corr)}), at "
              f"least its interval's low end in {inside}; median cut "
              f"{np.median([f['cases'][k]['cut'] for k in measured]):.0%}, median predicted "
              f"{np.median([corr[k] for k in measured]):.0%}")
    ratio = f["paired"] / f["unpaired"]
    versus = (f", ratio {ratio:.2f} (variance cut {1 - ratio ** 2:.0%})" if math.isfinite(ratio) else "")
    print(f"  paired against the alert's unpaired test (rounds kept, every case; the statistic changes too): "
          f"measured MDE {pct(f['paired'])} / {pct(f['unpaired'])}{versus}")


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool", type=Path, default=POOL)
    parser.add_argument("--n", type=int, nargs="*", default=[6, 10, 20, 40],
                        help="processes a side (none: the counts part alone)")
    parser.add_argument("--rows", type=int, nargs="+", default=[6, 60, 500], help="suite sizes")
    parser.add_argument("--trials", type=int, default=200, help="trials per figure (A/A suites: fewer for big m)")
    parser.add_argument("--counts-pool", type=Path, default=COUNTS_POOL,
                        help="instruction counts of identical code (evaluation/counts_pool.py); 'none' to skip")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    parser.add_argument("--rule-mde", action="store_true",
                        help="only the MDE of the verdict's whole rule at each --n, found by classify (issue 51)")
    parser.add_argument("--fresh", action="store_true",
                        help="with --rule-mde: synthetic draws with the pool's slow tail (fresh_cases), not the pool")
    parser.add_argument("--mde-suites", type=int, default=9,
                        help="with --rule-mde: suites whose first row's stated MDE gives the median")
    parser.add_argument("--quiet", type=float, default=None, metavar="SD",
                        help="with --rule-mde --fresh: a log-normal per-process spread SD, no slow processes")
    args = parser.parse_args(argv)
    policy = Policy()
    cases = load_pool(args.pool)
    if args.rule_mde:
        return rule_mde_main(args, cases, policy)
    rounds = min(len(v) for v in cases.values())
    rng = np.random.default_rng(0)
    corr = round_correlation(cases)
    intervals = correlation_intervals(cases, policy.confidence)
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
        if 2 * n <= rounds:  # broken rounds take 2n of the pool's; its own generator keeps the rest as it was
            figures["pairing"] = pairing(cases, n, args.trials, policy, np.random.default_rng(n))
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
        if "pairing" in figures:
            print_pairing(figures["pairing"], corr, intervals, policy)
    if str(args.counts_pool) != "none":
        result["counts"] = counts_replay(args.counts_pool, policy)
        print_counts(result["counts"])
    print(f"\ncaveat: draws of n rounds from a pool of {rounds} overlap when n is near {rounds}; "
          f"rates at n <= {rounds // 2} are the trustworthy ones")
    if args.out:
        atomic_write_text(args.out, json.dumps(result, indent=1, default=float))
    return result


def rule_mde_main(args, cases, policy: Policy) -> dict:
    rng = np.random.default_rng(51)
    rounds = min(len(v) for v in cases.values())
    source = f"fresh draws with {args.pool.name}'s slow tail" if args.fresh else args.pool.name
    if args.fresh and args.quiet is not None:
        source = f"fresh quiet draws (log-normal spread {args.quiet:.1%}, no slow processes)"
    if args.fresh:
        cases = fresh_cases(cases, 4 * max(args.n), rng, args.quiet)
    print(f"MDE of the verdict's whole rule (test at a lone row's bar in 60 rows, {policy.floor:.0%} floor, "
          f"interval), held to the suite's slow processes and simulated from its processes where the bar is "
          f"thin; median over {args.mde_suites} suites; {source}; {args.trials} fresh rows each; "
          f"found by stats.classify (stated {policy.power:.0%})")
    result = {"pool": args.pool.name, "fresh": args.fresh, "by_n": {}}
    for n in args.n:
        started = time.monotonic()
        f = rule_mde(cases, n, args.trials, policy, rng, args.mde_suites)
        result["by_n"][n] = f

        def text(x):
            if x["found"] is None:
                return f"{x['mde']:.1%} (no change reaches the bar)"
            return f"{x['mde']:.2%} found {x['found']:.0%} (test alone {x['test_alone']:.0%})"
        overlap = "" if args.fresh or 2 * n <= rounds else " [draws overlap: n > rounds/2]"
        print(f"  n = {n:2d}: rule {text(f['rule'])}; unsimulated (before) {text(f['unsimulated'])} "
              f"({time.monotonic() - started:.0f} s){overlap}", flush=True)
    if args.out:
        atomic_write_text(args.out, json.dumps(result, indent=1, default=float))
    return result


if __name__ == "__main__":
    main()
