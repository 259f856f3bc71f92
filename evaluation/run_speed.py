"""`torchbench run` against plain `asv run`: the tracker must add no time to asv (issue 7).

Measured in one run, interleaved, each repeat from a fresh results folder over
the same 3 commits of the example history and the same environment folder
(built once first, and reported):

  ours      torchbench run RANGE --no-publish (lock, config, asv setup check,
            build backend check, asv run, results reader, asv compare, report)
  anchor A  asv run HASHFILE --record-samples with the configuration torchbench
            derived (the same forkserver launch)
  anchor B  asv run HASHFILE --record-samples with asv's default launch method

and the example library's build+install time per commit (asv's <build> durations).

    python evaluation/run_speed.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import git

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from torchbench.asv_bridge import results  # noqa: E402
from torchbench.asv_bridge.driver import harness_env  # noqa: E402
from torchbench.project import example  # noqa: E402


def timed(cmd: list[str], **kwargs) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=harness_env(), **kwargs)
    return time.perf_counter() - start, proc


def check(proc: subprocess.CompletedProcess, what: str) -> None:
    if proc.returncode != 0:
        sys.exit(f"{what} failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


def asv_config(base: Path, out: Path, default_launch: bool) -> Path:
    conf = json.loads((base / "asv.conf.json").read_text())
    conf["results_dir"] = str(out / "results")
    conf["html_dir"] = str(out / "html")
    if default_launch:
        conf.pop("launch_method", None)
    out.mkdir(parents=True)
    path = out / "asv.conf.json"
    path.write_text(json.dumps(conf, indent=2))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="run-speed-"))
    try:
        repo = example.materialize(tmp / "tensorlib")
        envs = tmp / "envs"
        # one process a benchmark and commit, as `asv run` measures a track_ benchmark (run's default is 4)
        run = [sys.executable, "-m", "torchbench", "run", "--repo", str(repo), "HEAD~3..HEAD", "--env-dir", str(envs),
               "--rounds", "1"]
        seconds, proc = timed(run + ["--out", str(tmp / "warm"), "--no-publish"])
        check(proc, "the warm-up run")
        print(f"warm-up run (builds the environment, then measures): {seconds:.1f} s")
        for line in proc.stdout[proc.stdout.find("== where the time went"):].splitlines()[1:]:
            if line.strip():
                print(f"  {line.strip()}")
        hashes = tmp / "hashes"
        hashes.write_text("\n".join(c.hexsha for c in git.Repo(repo).iter_commits("HEAD~3..HEAD")))

        walls: dict[str, list[float]] = {"ours": [], "asv run (same config)": [], "asv run (asv's default launch)": []}
        builds: list[float] = []
        for i in range(args.repeats):
            out = tmp / f"ours{i}"
            seconds, proc = timed(run + ["--out", str(out), "--no-publish"])
            check(proc, "torchbench run")
            walls["ours"].append(seconds)
            found = results.load(out / "results")
            builds += [d["<build>"] for d in found.durations.values() if "<build>" in d]
            for name, default_launch in (("asv run (same config)", False), ("asv run (asv's default launch)", True)):
                conf = asv_config(tmp / "warm", tmp / f"asv-{i}-{'default' if default_launch else 'same'}",
                                  default_launch)
                seconds, proc = timed([sys.executable, "-m", "asv", "run", f"HASHFILE:{hashes}", "--record-samples",
                                       "--config", str(conf)])
                check(proc, name)
                walls[name].append(seconds)
        ours = statistics.median(walls["ours"])
        print(f"\n3 commits of the example history, wall time, median of {args.repeats} (interleaved):")
        for name, values in walls.items():
            median = statistics.median(values)
            print(f"  {name:32} {median:7.1f} s   ours/this {ours / median:5.2f}   "
                  f"(runs: {', '.join(f'{v:.1f}' for v in values)})")
        if builds:
            print(f"  example library build+install per commit: median {statistics.median(builds):.2f} s "
                  f"over {len(builds)} builds (hatchling, no build isolation)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
