"""Channels that agree (issue 50, item 5): how often a count-decided row stands while its wall time moved the other way.

A row that a deterministic channel decides is flagged in the channel's direction unless the wall time moved the
other way at counts.VETO_LEVEL (torchbench/ab/verdict.py's `_by_channel`: one-sided, Yuen's trimmed t-test on
log times, counts.opposite_p). This script measures that rule with the verdict's own function on fresh
draws of log-normal processes, at n processes a side:

    against   the counts rose 5%, the wall time fell 10%: the share still flagged (the rule's miss)
    flat      the counts rose 5%, the wall time did not move: the share vetoed (the rule's false veto,
              stated <= VETO_LEVEL)
    with      the counts rose 5%, the wall time rose 2%: the share vetoed

each at a per-process spread (sd of log) of 0.05 (a quiet row) and 0.3 (a busy day's fast op here). The
binomial standard error of each share is printed beside it.

    python evaluation/agreement_validation.py [--draws 2000] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from torchbench import stats  # noqa: E402
from torchbench.ab.counts import VETO_LEVEL  # noqa: E402
from torchbench.ab.verdict import COUNTS, Verdict, _by_channel  # noqa: E402
from torchbench_core.storage import atomic_write_text  # noqa: E402

SIZES = (2, 3, 4, 6, 8, 16, 32)
CASES = {"against": -0.10, "flat": 0.0, "with": 0.02}  # the wall time's true change
SPREADS = (0.05, 0.3)
COUNT_DELTA = 0.05


def flagged_share(wall: float, sd: float, n: int, draws: int, seed: int = 0) -> float:
    """The share of draws in which the verdict's rule flags the row in the counts' direction."""
    rng = np.random.default_rng(seed)
    flagged = 0
    for _ in range(draws):
        base = np.exp(rng.normal(0.0, sd, n))
        head = np.exp(rng.normal(math.log1p(wall), sd, n))
        row = Verdict("row", "row", [], "", base=float(np.median(base)), head=float(np.median(head)),
                      decided_by=COUNTS, decided_delta=COUNT_DELTA)
        flagged += _by_channel(row, list(base), list(head)) == stats.REGRESSED
    return flagged / draws


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    found = {}
    print(f"counts +{COUNT_DELTA:.0%}; share of {args.draws} draws flagged (against) or vetoed (flat, with); "
          f"VETO_LEVEL {VETO_LEVEL}")
    print(f"{'case':8} {'sd':>5} " + " ".join(f"{f'n={n}':>12}" for n in SIZES))
    for case, wall in CASES.items():
        for sd in SPREADS:
            shares = []
            for n in SIZES:
                flagged = flagged_share(wall, sd, n, args.draws)
                shares.append(flagged if case == "against" else 1 - flagged)
            found[f"{case}|{sd}"] = dict(zip(map(str, SIZES), shares))
            se = [math.sqrt(max(s * (1 - s), 1 / args.draws) / args.draws) for s in shares]
            print(f"{case:8} {sd:5.2f} " + " ".join(f"{s:6.1%}±{e:4.1%}" for s, e in zip(shares, se)), flush=True)
    if args.json:
        atomic_write_text(args.json, json.dumps({"draws": args.draws, "count_delta": COUNT_DELTA,
                                                 "veto_level": VETO_LEVEL, "shares": found}, indent=1))


if __name__ == "__main__":
    main()
