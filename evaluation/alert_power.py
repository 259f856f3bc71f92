"""False alarms and power of `torchbench alert`, from one large pool of real processes (issue 8).

Running the alert end to end a hundred times would take a day of this machine
(evaluation/alert_validation.py runs it a few times, beside asv continuous). This
script measures instead one pool of fresh worker processes of the example's
suite, rotating over five *arms* round after round, each round in a shuffled
order, so that drift hits every arm alike:

    c5     the example's commit 5 (the fast path)        } identical measured code
    c6     commit 6 ("Add tests"), the base of the rest    } (the A/A pair)
    +5% / +10% / +30%   commit 6 with a busy loop in TensorLike.__torch_function__
                        (evaluation/alert_validation.py's calibrated injection)

Each process runs all six benchmarks (torchbench_core.asv_worker, as the alert
does), and its per-benchmark summary is one observation. A fixed busy loop
lands near its size, not on it, so the report prints what each injected arm
moved by over the whole pool; two more pairs give exact effects on real
noise: the identical arms with the head's processes multiplied by 1.05 and
by 1.10 (every benchmark is then a target). The pool is saved
after every round (--pool FILE), so a run can be stopped and resumed.

Then the alert's own decision procedure is replayed on draws from the pool:
for n rounds, a random subset of the pool's rounds (without replacement), fed
round by round through the alert's interim rule (torchbench.ab.rounds.interim_decisions:
early stop when clearly changed or clearly within +-5%) and its final decision
(torchbench.ab.verdict.decide: the permutation test, Benjamini-Hochberg across the six
benchmarks, the floor, 'inconclusive'), with the default policy. Instruction
counts are left out of the replay: counts would label an A/A row 'wall time
only' and hold it to a stricter bar, so the false-alarm rate here is an upper
bound; the injected loop moves the counts ('compute'), whose bar is the one
replayed.

    python evaluation/alert_power.py [--rounds 60] [--pool FILE] [--draws 60] [--replay-only]

Caveat printed with the figures: draws of n rounds from a pool of N overlap
when n is near N, so they are not independent repeats; rates at n <= N/2 are
the trustworthy ones.
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

from alert_validation import alert, calibrate, inject  # noqa: E402

from torchbench import stats  # noqa: E402
from torchbench.ab import rounds as measure  # noqa: E402
from torchbench.ab.evidence import Evidence, JobInfo, Side  # noqa: E402
from torchbench.ab.options import MIN_ROUNDS, Policy, Rounds  # noqa: E402
from torchbench.ab.pair import select_jobs  # noqa: E402
from torchbench.ab.sides import side_env  # noqa: E402
from torchbench.ab.verdict import decide  # noqa: E402
from torchbench.asv_bridge.worker import list_benchmarks  # noqa: E402
from torchbench.project import example  # noqa: E402
from torchbench_core.storage import atomic_write_text  # noqa: E402

ARMS = ("c5", "c6", "+5%", "+10%", "+30%")
# (label, base arm, head arm, effect, scale): an injected arm is real code, whose effect the whole pool measures
# (a fixed busy loop lands near, not on, its size); a scaled pair is the identical arms with the head's processes
# multiplied by an exact factor: real noise, a known effect
PAIRS = [("A/A (c6 vs c5)", "c6", "c5", None, 1.0), ("+5% injected", "c6", "+5%", 0.05, 1.0),
         ("+10% injected", "c6", "+10%", 0.10, 1.0), ("+30% injected", "c6", "+30%", 0.30, 1.0),
         ("A/A x 1.05", "c6", "c5", 0.05, 1.05), ("A/A x 1.10", "c6", "c5", 0.10, 1.10)]
TARGET = "TensorLike"


def measure_pool(pool_file: Path, rounds: int, tmp: Path) -> dict:
    """Rotate the five arms for `rounds` rounds (added to what POOL_FILE holds); returns the pool."""
    pool = json.loads(pool_file.read_text()) if pool_file.exists() else None
    path = example.materialize(tmp / "tensorlib")
    repo = git.Repo(path)
    shas = [c.hexsha for c in reversed(list(repo.iter_commits("HEAD")))]
    envs, work = tmp / "envs", tmp / "work"
    alert(path, shas[4], shas[5], work, envs, 0.1)  # builds the environment and installs c5, c6
    python = next(envs.glob("*/bin/python"))
    if pool is None:
        t_add, t_iter = calibrate(work / "installs" / shas[5][:12], python)
        print(f"calibration: TensorLike torch.add {t_add * 1e6:.2f} us; one loop iteration {t_iter * 1e9:.1f} ns",
              flush=True)
        loops = {p: max(1, round(p * t_add / t_iter)) for p in (0.05, 0.10, 0.30)}
        pool = {"calibration": {"add_s": t_add, "iteration_s": t_iter, "loops": {f"{p:.2f}": k for p, k in loops.items()}},
                "jobs": None, "rounds": []}
    loops = {float(p): k for p, k in pool["calibration"]["loops"].items()}
    commits = {"c5": shas[4], "c6": shas[5]}
    for p, k in loops.items():
        commits[f"+{p:.0%}"] = inject(repo, shas[5], k, f"{p:.0%}")
        alert(path, shas[5], commits[f"+{p:.0%}"], work, envs, 0.1)  # installs it
    sides = {arm: Side(arm, sha, work / "installs" / sha[:12], python) for arm, sha in commits.items()}
    suite = path / "benchmarks"
    evidence = Evidence()
    jobs = select_jobs({"base": list_benchmarks(python, suite, side_env(sides["c6"])),
                        "head": list_benchmarks(python, suite, side_env(sides["c5"]))}, (), evidence)
    pool["jobs"] = {f"{n}|{i}": evidence.jobs[(n, i)].name for n, i in jobs}
    rng = random.Random(len(pool["rounds"]))
    cache = tmp / "setup-cache"
    cache.mkdir(exist_ok=True)
    for r in range(rounds):
        arms = list(ARMS)
        rng.shuffle(arms)
        record = {}
        for arm in arms:
            todo = jobs[:]
            rng.shuffle(todo)
            start = time.perf_counter()
            results, died = measure._one_process(suite, sides[arm], todo, cache, timeout=600, run_time={})
            values, samples = {}, {}
            for job, result in results.items():
                if "samples" in result:
                    values[f"{job[0]}|{job[1]}"] = stats.process_summary(result["samples"])
                    samples[f"{job[0]}|{job[1]}"] = result["samples"]
            # the blocks too, for a later look at the spread inside a process (nothing reads them yet: the
            # synthetic histories of evaluation/changepoint_validation.py model that spread)
            record[arm] = {"values": values, "samples": samples, "seconds": time.perf_counter() - start,
                           "died": died}
        pool["rounds"].append({"order": arms, "arms": record})
        atomic_write_text(pool_file, json.dumps(pool))
        walls = [record[a]["seconds"] for a in arms]
        print(f"round {len(pool['rounds'])}: {np.mean(walls):.1f} s a process", flush=True)
    return pool


def replay(pool: dict, base: str, head: str, n: int, draws: int, seed: int = 0, scale: float = 1.0
           ) -> list[dict[str, str]]:
    """The alert's verdicts on `draws` random subsets of n of the pool's rounds: [{job key: status}].
    scale: the head's values are multiplied by it (a known effect on real noise)."""
    rng = np.random.default_rng(seed)
    policy = Policy()
    rounds = [r for r in pool["rounds"] if base in r["arms"] and head in r["arms"]]
    keys = list(pool["jobs"])
    out = []
    for _ in range(draws):
        chosen = rng.choice(len(rounds), size=n, replace=False)
        evidence = Evidence()
        jobs = []
        for key in keys:
            name, _, index = key.rpartition("|")
            job = (name, int(index))
            jobs.append(job)
            evidence.jobs[job] = JobInfo(pool["jobs"][key], unit="seconds", on_base=True, on_head=True)
        # the alert's own design: its looks planned for n rounds
        measure.plan_design(evidence, jobs, policy, Rounds(min_rounds=min(MIN_ROUNDS, n), max_rounds=max(n, 2)))
        for k, r in enumerate(chosen):
            arms = rounds[r]["arms"]
            for job, key in zip(jobs, keys):
                if job in evidence.decided:
                    continue
                for side, arm, factor in (("base", base, 1.0), ("head", head, scale)):
                    if key in arms[arm]["values"]:
                        evidence.values[side].setdefault(job, []).append(arms[arm]["values"][key] * factor)
            evidence.rounds = k + 1
            measure.interim_decisions(evidence, jobs, policy)
        rows = decide(evidence, policy)
        out.append({r.name: r.status for r in rows} | {"_mde": {r.name: r.comparison.mde for r in rows
                                                                 if r.comparison}})
    return out


def report(pool: dict, ns: list[int], draws: int) -> None:
    total = len(pool["rounds"])
    seconds = [a["seconds"] for r in pool["rounds"] for a in r["arms"].values()]
    print(f"\n== pool: {total} rounds x {len(ARMS)} arms, {np.median(seconds):.1f} s a process (all six "
          f"benchmarks); injected loops {pool['calibration']['loops']}")
    names = list(pool["jobs"].values())
    targets = [n for n in names if TARGET in n]
    print(f"   targets: {', '.join(targets)}")
    print(f"\n{'pair':16} {'rounds':>6} {'draws':>5}  {'targets flagged':>16}  {'other rows flagged':>18}  "
          f"{'targets inconcl.':>16}  median MDE per benchmark")
    for label, base, head, effect, _ in PAIRS[1:4]:  # the injected effect as the whole pool measures it
        sizes = []
        for key, name in pool["jobs"].items():
            if TARGET in name:
                b, h = ([r["arms"][arm]["values"][key] for r in pool["rounds"] if key in r["arms"][arm]["values"]]
                        for arm in (base, head))
                sizes.append(f"{stats.compare(b, h, resamples=2000).ratio - 1:+.1%}")
        print(f"   {label}: the targets moved {' and '.join(sizes)} over all {total} rounds")
    for label, base, head, effect, scale in PAIRS:
        # the scaled pairs move every benchmark: each is a target
        hit_rows = names if scale != 1.0 else targets
        for n in ns:
            if n > total:
                continue
            verdicts = replay(pool, base, head, n, draws, scale=scale)
            wrong = "improved" if effect else None
            t_hit = sum(v[t] == "regressed" for v in verdicts for t in hit_rows) if effect else None
            others = [t for t in names if effect is None or t not in hit_rows]
            flagged = sum(v[t] in ("regressed", "improved") for v in verdicts for t in others)
            if effect:
                flagged += sum(v[t] == wrong for v in verdicts for t in hit_rows)
            inconclusive = sum(v[t] == "inconclusive" for v in verdicts for t in hit_rows)
            mde = {t: np.median([v["_mde"].get(t, np.nan) for v in verdicts]) for t in names}
            mdes = " ".join(f"{mde[t]:.1%}" for t in names)
            rows_hit = len(verdicts) * len(hit_rows)
            hits = f"{t_hit}/{rows_hit} ({t_hit / rows_hit:.0%})" if effect else "-"
            rows_other = max(len(verdicts) * len(others), 1)
            print(f"{label:16} {n:>6} {draws:>5}  {hits:>16}  {flagged:>7}/{len(verdicts) * len(others):<4} "
                  f"({flagged / rows_other:.1%})  {inconclusive:>10}/{rows_hit:<5}  {mdes}", flush=True)
    if max(ns) > total / 2:
        print(f"\nnote: draws of n > {total // 2} rounds from {total} overlap heavily; they are not independent "
              f"repeats, so those rates are optimistic about their own precision")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=60, help="rounds to add to the pool (default 60)")
    parser.add_argument("--pool", type=Path, default=None, help="the pool file (default: a temporary one)")
    parser.add_argument("--draws", type=int, default=60)
    parser.add_argument("--n", type=int, nargs="+", default=[10, 20, 30])
    parser.add_argument("--replay-only", action="store_true", help="replay an existing --pool, measure nothing")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="alert-power-") as tmp:
        pool_file = args.pool or Path(tmp) / "pool.json"
        if args.replay_only:
            pool = json.loads(pool_file.read_text())
        else:
            pool = measure_pool(pool_file, args.rounds, Path(tmp))
        report(pool, args.n, args.draws)


if __name__ == "__main__":
    main()
