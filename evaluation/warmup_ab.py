"""Warm-up calls of costly rows: counts and valgrind seconds with the plan's warm-up against 8 calls (issue 63).

The layer rows of costly_rows.py whose call takes 0.1-0.6 ms natively (six of them) are planned (asv_worker's
plan mode), then counted twice at once, one valgrind process each: with the warm-up WARMUP_SECONDS of calls
plans (16-32 calls here, each after its setup, as before asv_worker.SHORT_WARMUP_CALL) and with 8. Printed:
each process's seconds, and each row's three repeats and the move of their median between the two.

    python evaluation/warmup_ab.py
"""

from __future__ import annotations

import os
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "evaluation"))
sys.path.insert(0, str(ROOT))

from costly_rows import make_suite  # noqa: E402
from counting_speed import _combinations, worker  # noqa: E402

from torchbench_core.asv_worker import WARMUP_SECONDS, _power_of_two  # noqa: E402


def main() -> None:
    import argparse

    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    with tempfile.TemporaryDirectory(prefix="warmup_ab_") as name:
        tmp = Path(name)
        suite = make_suite(tmp)
        for folder in ("c1", "c2"):
            (tmp / folder).mkdir()
        env = dict(os.environ, PYTHONHASHSEED="0")
        listing, _ = worker("list", suite, [], env, tmp / "c1")
        jobs = [[b["name"], i] for b in listing for i in range(_combinations(b))]
        plans, _ = worker("plan", suite, jobs, env, tmp / "c1")
        native, _ = worker("run", suite, jobs, env, tmp / "c1")
        each = {tuple(r["job"]): min(r["samples"]) for r in native if "samples" in r}
        chosen = [j for j in jobs if 1e-4 <= each.get(tuple(j), 0) <= 6e-4
                  and "plan" in plans.get(f"{j[0]}|{j[1]}", {})][:6]
        # the warm-up WARMUP_SECONDS of calls plans, each call with its setup (the plan's "setup" seconds)
        full = [[*j, plans[f"{j[0]}|{j[1]}"]["plan"][0],
                 _power_of_two(WARMUP_SECONDS / (each[tuple(j)] + plans[f"{j[0]}|{j[1]}"]["setup"]), 8, 128)]
                for j in chosen]
        print("rows (ms a call, calls a run, warm-up):",
              [(f"{n}({i})", round(each[(n, i)] * 1e3, 3), c, w) for n, i, c, w in full], flush=True)
        short = [[n, i, c, 8] for n, i, c, _ in full]
        with ThreadPoolExecutor(2) as pool:
            runs = [pool.submit(worker, "counts", suite, planned, env, tmp / folder)
                    for planned, folder in ((full, "c1"), (short, "c2"))]
            (ra, sa), (rb, sb) = (run.result() for run in runs)
    print(f"valgrind seconds: planned warm-up {sa:.1f}, 8 calls {sb:.1f}")
    for n, i, *_ in full:
        ca, cb = ra[f"{n}|{i}"]["counts"], rb[f"{n}|{i}"]["counts"]
        ma, mb = sorted(ca)[1], sorted(cb)[1]
        print(f"  {n}({i}): {[round(x) for x in ca]} -> {[round(x) for x in cb]}  {(mb - ma) / ma:+.3%}")


if __name__ == "__main__":
    main()
