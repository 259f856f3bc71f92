"""Our pages' publish time and peak memory against `asv publish` itself, on the same results (issue 9).

Synthetic results, written through asv's own Results API: COMMITS commits of a
real git repository (made with git fast-import) x BENCHMARKS rows (TimerSuite
style: BENCHMARKS/4 labels of 4 cases, 10 samples each), one machine, one
environment. Measured in one run, interleaved, medians of --repeats:

  anchor     asv publish with no plugins (asv's own pages)
  ours       torchbench's pages alone (publisher.render_site in a fresh process,
             reading the same results through asv's Results API), no cache
  both       asv publish with our publisher plugin (what a user runs), no cache
  unchanged  ours again, with the cache the last publish left (sitecache)
  new commit ours after one more commit's results (every label) are added
  one label  ours after one more commit's results of one label only

Wall time, peak RSS of the largest process (/usr/bin/time) and peak PSS of the whole
process tree (sampled every 20 ms: asv's step-detection pool and our forked
children count together) of each.

    python evaluation/publish_speed.py [--commits 2000] [--benchmarks 200] [--repeats 3]
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CASES = ["Tensor", "SubTensor", "WithTorchFunction", "SubWithTorchFunction"]
SAMPLES = 10


def make_repo(path: Path, commits: int) -> list[str]:
    """A linear history of `commits` commits on main, via git fast-import (seconds, not minutes)."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    lines = []
    for i in range(commits):
        stamp = 1_700_000_000 + i * 3600
        data = f"step {i}\n"
        lines += ["commit refs/heads/main", f"mark :{i + 1}", f"committer b <b@example.com> {stamp} +0000",
                  f"data {len(f'commit {i}')}", f"commit {i}"]
        if i:
            lines.append(f"from :{i}")
        lines += ["M 644 inline file.txt", f"data {len(data)}", data]
    subprocess.run(["git", "fast-import", "--quiet"], cwd=path, input="\n".join(lines) + "\n", text=True, check=True)
    out = subprocess.run(["git", "rev-list", "--reverse", "main"], cwd=path, capture_output=True, text=True, check=True)
    return out.stdout.split()


def benchmarks(n_rows: int) -> dict[str, dict]:
    out = {}
    for b in range(n_rows // len(CASES)):
        name = f"bench_{b:03d}.Suite.track_time"
        out[name] = {"name": name, "type": "track", "unit": "seconds", "version": "1", "code": "",
                     "param_names": ["label", "sub_label", "description", "num_threads"],
                     "params": [[repr(f"label {b:03d}")], [repr(c) for c in CASES], ["'torch.add(t1, t2)'"], ["1"]]}
    return out


def write_results(results_dir: Path, shas: list[str], benches: dict[str, dict], rng) -> None:
    from asv.benchmarks import Benchmarks
    from asv.results import Results
    from asv.runner import BenchmarkResult
    from asv import util

    machine = results_dir / "bench"
    machine.mkdir(parents=True, exist_ok=True)
    util.write_json(str(machine / "machine.json"), {"machine": "bench", "arch": "x86_64", "cpu": "", "num_cpu": "2",
                                                     "os": "Linux", "ram": ""}, api_version=1)
    util.write_json(str(results_dir / "benchmarks.json"), benches, api_version=Benchmarks.api_version)
    for i, sha in enumerate(shas):
        write_commit(results_dir, sha, i, benches, rng)


def write_commit(results_dir: Path, sha: str, i: int, benches: dict[str, dict], rng) -> None:
    from asv.results import Results
    from asv.runner import BenchmarkResult

    res = Results({"machine": "bench", "python": "3.11"}, {}, sha, 1_700_000_000_000 + i * 3_600_000, "3.11",
                  "existing-py", {})
    for b in benches.values():
        samples = [list(rng.lognormal(np.log(2e-6 * (1 + k)), 0.05, SAMPLES)) for k in range(len(CASES))]
        res.add_result(b, BenchmarkResult(result=[float(np.median(s)) for s in samples], samples=samples,
                                          number=[1000] * len(CASES), errcode=0, stderr="", profile=None),
                       started_at=datetime.datetime.now(datetime.timezone.utc), duration=1.0, record_samples=True)
    res.save(str(results_dir))


def config(base: Path, repo: Path, plugins: list[str], name: str) -> Path:
    conf = {"version": 1, "project": "synthetic", "project_url": "", "repo": str(repo), "branches": ["main"],
            "dvcs": "git", "environment_type": "existing", "benchmark_dir": str(base / "benchmarks"),
            "results_dir": str(base / "results"), "html_dir": str(base / f"html-{name}"), "plugins": plugins}
    path = base / f"asv-{name}.conf.json"
    path.write_text(json.dumps(conf))
    return path


OURS = """\
import sys, git
from asv.config import Config
from torchbench.publish.publisher import render_site
conf = Config.load(sys.argv[1])
shas = git.Repo(conf.repo).git.rev_list("--reverse", "main").split()
render_site(conf, {sha: i for i, sha in enumerate(shas)})
"""


def _tree(pid: int) -> list[int]:
    """pid and its descendants (Linux: /proc/PID/task/TID/children). A process that ends while it is read
    (a forked worker finishing) is left out, not an error."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        try:
            for children in Path(f"/proc/{p}/task").glob("*/children"):
                todo += [int(c) for c in children.read_text().split()]
        except OSError:
            continue
    return found


def _pss_mib(pids: list[int]) -> float:
    """The processes' proportional set sizes summed: each shared page (a forked child's inherited memory)
    counted once, split between its sharers, so the sum is what the tree occupies together."""
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                total += next(int(line.split()[1]) for line in f if line.startswith("Pss:"))
        except (OSError, StopIteration):
            continue
    return total / 1024


def measured(cmd: list[str]) -> tuple[float, float, float]:
    """Wall seconds, peak RSS of its largest process (MiB, /usr/bin/time) and peak PSS of its whole process
    tree (MiB, sampled every 20 ms: asv's step-detection pool and our forked children together)."""
    with tempfile.NamedTemporaryFile("r", suffix=".txt") as f:
        start = time.perf_counter()
        proc = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", f.name, *cmd], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=ROOT)
        peak = 0.0
        pipes = threading.Thread(target=lambda: outputs.append(proc.communicate()), daemon=True)
        outputs: list[tuple[str, str]] = []
        pipes.start()
        while proc.poll() is None:
            peak = max(peak, _pss_mib(_tree(proc.pid)))
            time.sleep(0.02)
        pipes.join()
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            out, err = outputs[0] if outputs else ("", "")
            sys.exit(f"{cmd} failed ({proc.returncode}):\n{out[-2000:]}\n{err[-3000:]}")
        return wall, int(f.read().split()[-1]) / 1024, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=2000)
    parser.add_argument("--benchmarks", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    rng = np.random.default_rng(0)
    base = Path(tempfile.mkdtemp(prefix="publish-speed-"))
    try:
        (base / "benchmarks").mkdir()
        start = time.perf_counter()
        shas = make_repo(base / "repo", args.commits + 1)
        benches = benchmarks(args.benchmarks)
        write_results(base / "results", shas[:-1], benches, rng)
        print(f"== {args.commits} commits x {len(benches) * len(CASES)} rows written in "
              f"{time.perf_counter() - start:.0f} s", flush=True)
        asv = [sys.executable, "-m", "asv", "publish", "--config"]
        commands = {
            "anchor": asv + [str(config(base, base / "repo", [], "asv"))],
            "ours": [sys.executable, "-c", OURS, str(config(base, base / "repo", [], "ours"))],
            "both": asv + [str(config(base, base / "repo", [".torchbench.publish.publisher"], "both"))],
        }
        cache = base / "cache"  # OUT/cache/site: OUT is the results folder's parent here
        results = base / "results"

        def cold() -> None:
            shutil.rmtree(cache, ignore_errors=True)

        def commit(benches_of_it: dict | None) -> None:
            for newest in (results / "bench").glob(f"{shas[-1][:8]}-*.json"):
                newest.unlink()
            if benches_of_it:
                write_commit(results, shas[-1], args.commits, benches_of_it, np.random.default_rng(1))

        one_label = dict(list(benches.items())[:1])
        cases = ["anchor", "ours", "both", "unchanged", "new commit", "new commit, one label"]
        times: dict[str, list[tuple[float, float, float]]] = {k: [] for k in cases}
        for r in range(args.repeats):
            commit(None)
            times["anchor"].append(measured(commands["anchor"]))
            cold()
            times["both"].append(measured(commands["both"]))
            cold()
            times["ours"].append(measured(commands["ours"]))  # leaves the cache of these results
            times["unchanged"].append(measured(commands["ours"]))
            commit(benches)
            times["new commit"].append(measured(commands["ours"]))
            commit(None)
            measured(commands["ours"])  # back to the cache of the history without it
            commit(one_label)
            times["new commit, one label"].append(measured(commands["ours"]))
            print(f"   repeat {r + 1}: " + ", ".join(f"{k} {v[-1][0]:.1f} s / {v[-1][1]:.0f} / {v[-1][2]:.0f} MiB"
                                                    for k, v in times.items()), flush=True)
        med = {k: tuple(statistics.median(x[i] for x in v) for i in range(3)) for k, v in times.items()}
        a_t, a_m, a_p = med["anchor"]
        print(f"\n{args.commits} commits x {len(benches) * len(CASES)} rows, medians of {args.repeats} "
              f"(peak RSS: the largest process, /usr/bin/time; peak PSS: the whole process tree, sampled):\n")
        print("| publish | wall time | / asv publish | peak RSS | / asv publish | peak PSS | / asv publish |")
        print("|---|---|---|---|---|---|---|")
        labels = {"anchor": "asv publish (asv's pages)", "ours": "torchbench pages alone, no cache",
                  "both": "asv publish + torchbench plugin, no cache",
                  "unchanged": "ours again, nothing new", "new commit": "ours, one new commit (every label)",
                  "new commit, one label": "ours, one new commit of one label"}
        for name, label in labels.items():
            t, m, pss = med[name]
            print(f"| {label} | {t:.1f} s | {t / a_t:.2f} | {m:.0f} MiB | {m / a_m:.2f} | {pss:.0f} MiB | "
                  f"{pss / a_p:.2f} |")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
