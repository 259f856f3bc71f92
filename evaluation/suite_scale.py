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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool", type=Path, default=POOL)
    parser.add_argument("--sizes", type=int, nargs="+", default=[6, 60, 118, 500])
    parser.add_argument("--effects", type=float, nargs="+", default=[0.05, 0.1, 0.5])
    parser.add_argument("--suites", type=int, default=10, help="suites per size and effect")
    parser.add_argument("--processes", type=int, default=20, help="processes a side")
    args = parser.parse_args()
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
