"""Where the noise of a fast row lives: blocks, processes, and the moment both sides share (issue 26, item 4).

A row's evidence is one value per process (stats.process_summary: the median of the process's blocks). The
variance of that value across fresh processes of identical code splits into three parts:

    blocks     the block-to-block noise inside a process, as it reaches the process's median: per process,
               the squared difference of the medians of its odd and its even blocks, over 4 (each half's
               median varies about twice the whole's), averaged. Interleaved halves, not a bootstrap: a
               process whose blocks shift mid-way (a few do here) would make the bootstrap median jump between
               the two levels, where both halves see both
    moment     what two processes measured in the same round share (the machine's load, frequency, cache
               state of the host at that time): the covariance of the two identical arms' values over
               rounds. Alternating base and head removes drift between rounds but not this; running the two
               at the same time (duet rounds) is what can remove it
    process    the rest: what makes one process fast or slow as a whole (address layout, allocation, hash
               seeds, which core and what else ran there), fixed for its lifetime; only more processes
               average it out

and the fast and slow groups: the share of processes whose value lies more than SLOW above the case's lower
quartile, and the variance of the fast group alone.

Read from a pool of evaluation/alert_power.py (its arms c5 and c6 run identical code; the pool must keep the
blocks, "samples", which alert_power.py records):

    python evaluation/noise_parts.py POOL [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ARMS = ("c5", "c6")
SLOW = 0.15  # a process more than 15% above the case's lower quartile is in the slow group


def block_variance(blocks: list[float]) -> float:
    """One process's estimate of its median's variance from block noise (log scale): the odd and even blocks'
    medians differ by the noise of two half-samples, each about twice the whole's variance."""
    logs = np.log(np.asarray(blocks, dtype=float))
    return float((np.median(logs[0::2]) - np.median(logs[1::2])) ** 2 / 4)


def parts(pool: dict) -> dict[str, dict]:
    """Per case: the variance of the log process value and its parts (see the module's docstring)."""
    out = {}
    for key, name in pool["jobs"].items():
        pairs, blocks = [], []
        for r in pool["rounds"]:
            arms = [r["arms"].get(a, {}) for a in ARMS]
            if all(key in a.get("values", {}) for a in arms):
                pairs.append([np.log(a["values"][key]) for a in arms])
            for a in arms:
                if key in a.get("samples", {}) and len(a["samples"][key]) >= 3:
                    blocks.append(a["samples"][key])
        if len(pairs) < 4:
            continue
        v = np.asarray(pairs)
        centred = v - v.mean(axis=0)  # each arm about its own mean (identical code: the means agree)
        total = float(np.var(centred.ravel(), ddof=1))
        moment = float(np.cov(v[:, 0], v[:, 1])[0, 1])
        block = float(np.mean([block_variance(b) for b in blocks])) if blocks else float("nan")
        values = np.exp(v.ravel())
        q1 = np.quantile(values, 0.25)
        slow = values > q1 * (1 + SLOW)
        fast_logs = np.log(values[~slow])
        out[key] = {"name": name, "rounds": len(v), "total": total, "blocks": block, "moment": moment,
                    "process": total - moment - (block if np.isfinite(block) else 0.0),
                    "slow_share": float(slow.mean()), "fast_group_total": float(np.var(fast_logs, ddof=1)),
                    "blocks_per_process": float(np.median([len(b) for b in blocks])) if blocks else None}
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pool", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    pool = json.loads(args.pool.read_text())
    result = parts(pool)
    if not result:
        sys.exit(f"{args.pool}: no case with 4 rounds of both identical arms")
    print(f"pool {args.pool.name}: the variance of a process's log value (sd in %), and its parts' shares")
    print(f"{'case':58} {'rounds':>6} {'sd':>6} {'blocks':>7} {'moment':>7} {'process':>8} {'slow':>5} {'fast sd':>8}")
    for f in result.values():
        share = (lambda part: f"{part / f['total']:.0%}" if np.isfinite(part) else "-")
        print(f"{f['name'][-58:]:58} {f['rounds']:>6} {np.sqrt(f['total']):>6.1%} {share(f['blocks']):>7} "
              f"{share(f['moment']):>7} {share(f['process']):>8} {f['slow_share']:>5.0%} "
              f"{np.sqrt(f['fast_group_total']):>8.1%}")
    shares = {p: float(np.median([f[p] / f["total"] for f in result.values()])) for p in ("blocks", "moment", "process")}
    print("median shares: " + ", ".join(f"{p} {s:.0%}" for p, s in shares.items()))
    if args.json:
        args.json.write_text(json.dumps({"cases": result, "median_shares": shares}, indent=1))
    return result


if __name__ == "__main__":
    main()
