"""Real pools of alternating rounds and of duet rounds, interleaved, for replaying the alert on each (issue 26).

Each round of this script runs the example's six dispatch cases in the alert's worker
(torchbench_core.asv_worker, as `torchbench alert` runs it) twice over, in an order drawn each round:

    alternating   commit 5's process, then commit 6's (or the other way round), each alone on the machine
                  (rounds._one_process: what `--design alternating` runs)
    duet          both at once, one core each, meeting before every case's timing (rounds._duet: what
                  `--design duet` runs)

Commits 5 and 6 of the example run identical measured code (the A/A pair of evaluation/alert_power.py).
Each design's rounds are saved as a pool in alert_power.py's format (arms c5 and c6), so
evaluation/stats_validation.py replays the alert's decision on either (`--pool`): A/A suites flagged, power
at +2/+5/+10% (the head's values multiplied: real noise, an exact effect), the stated MDE and how often it is
found, the paired test beside the unpaired, and the round correlation; evaluation/noise_parts.py splits each
pool's variance into blocks, the moment a round's two processes share, and the process (each process's blocks
are kept). The seconds each design's rounds take are saved beside (a duet round runs its two processes at
once), so the figures can be read at equal minutes.

    python evaluation/duet_pool.py --rounds 60 --out DIR   # DIR/alternating.json, DIR/duet.json

Exits 0 once the rounds are measured (what they show is not asserted), 2 when a step failed.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import git
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "evaluation"))

from alert_validation import alert  # noqa: E402

from torchbench import stats  # noqa: E402
from torchbench.ab import rounds as measure  # noqa: E402
from torchbench.ab.evidence import Evidence, Side  # noqa: E402
from torchbench.ab.pair import select_jobs  # noqa: E402
from torchbench.ab.sides import side_env  # noqa: E402
from torchbench.asv_bridge.worker import list_benchmarks  # noqa: E402
from torchbench.project import example  # noqa: E402
from torchbench_core.storage import atomic_write_text  # noqa: E402

DESIGNS = ("alternating", "duet")


def _arm(results: dict, died: str | None) -> dict:
    """One process's record in alert_power.py's pool format: per case its value and its blocks."""
    timed = {f"{job[0]}|{job[1]}": r["samples"] for job, r in results.items() if "samples" in r}
    return {"values": {key: stats.process_summary(samples) for key, samples in timed.items()}, "samples": timed,
            "died": died}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=60, help="rounds of each design (default 60)")
    parser.add_argument("--out", type=Path, required=True, help="folder for alternating.json and duet.json")
    args = parser.parse_args(argv)
    cores = measure.duet_cores()
    if cores is None:
        print("duet rounds need two usable cores; this process has one", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        path = example.materialize(tmp / "tensorlib")
        shas = [c.hexsha for c in reversed(list(git.Repo(path).iter_commits("HEAD")))]
        envs, work = tmp / "envs", tmp / "work"
        alert(path, shas[4], shas[5], work, envs, 0.1)  # builds the environment and installs both commits
        python = next(envs.glob("*/bin/python"))
        sides = {arm: Side(arm, sha, work / "installs" / sha[:12], python) for arm, sha in
                 (("c5", shas[4]), ("c6", shas[5]))}
        suite = path / "benchmarks"
        evidence = Evidence()
        jobs = select_jobs({"base": list_benchmarks(python, suite, side_env(sides["c5"])),
                            "head": list_benchmarks(python, suite, side_env(sides["c6"]))}, (), evidence)
        pools = {d: {"note": f"evaluation/duet_pool.py, design {d}, {time.strftime('%Y-%m-%d')}: the example's "
                                "commits 5 and 6 (identical measured code), rounds interleaved with the other "
                                "design's", "design": d, "jobs": {f"{n}|{i}": evidence.jobs[(n, i)].name for n, i in jobs},
                     "rounds": [], "seconds": []} for d in DESIGNS}
        rng = random.Random(0)
        cache = tmp / "setup-cache"
        cache.mkdir()
        for r in range(args.rounds):
            designs = list(DESIGNS)
            rng.shuffle(designs)
            todo = jobs[:]
            rng.shuffle(todo)
            order = ("c5", "c6") if rng.random() < 0.5 else ("c6", "c5")
            for design in designs:
                started = time.perf_counter()
                if design == "duet":
                    found = measure._duet(suite, sides, order, todo, cache, 600, {}, cores)
                else:
                    found = {arm: measure._one_process(suite, sides[arm], todo, cache, timeout=600, run_time={})
                             for arm in order}
                seconds = time.perf_counter() - started
                arms = {arm: _arm(results, died) for arm, (results, died) in found.items()}
                pools[design]["rounds"].append({"order": list(order), "arms": arms})
                pools[design]["seconds"].append(seconds)
                atomic_write_text(args.out / f"{design}.json", json.dumps(pools[design]))
            print(f"round {r + 1}: " + ", ".join(f"{d} {pools[d]['seconds'][-1]:.1f} s" for d in DESIGNS),
                  flush=True)
        for design in DESIGNS:
            print(f"{design}: median {np.median(pools[design]['seconds']):.1f} s a round")
    return 0


if __name__ == "__main__":
    sys.exit(main())
