"""The main job: asv history over the last N commits of a repository, then a published site.

    python -m torchbench.history [--repo PATH] [--commits N] [--bench REGEX]

Steps (each timed and reported at the end):
  1. asv machine   - record this machine once (asv refuses to run without it)
  2. asv setup     - build the asv-managed environment (torch pinned, CPU wheel)
  3. asv run       - per commit: build and install the project, run the suites,
                     record samples (forkserver launch: torch is imported once
                     per commit and environment, not once per benchmark)
  4. asv publish   - the static site
  5. asv compare   - the last two commits, with asv's statistics

asv traps handled here: `--quick` results are never saved (asv saves them;
we add --dry-run); asv_runner 0.3 re-runs `setup` around timed calls, so the
suites use track_ benchmarks timed by torchbench_core; `asv compare` always
exits 0, so regressions are read from its table (--fail-on-regression).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import git

from . import site_assets

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Timings:
    steps: dict[str, float] = field(default_factory=dict)

    def run(self, name: str, cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
        print(f"\n== {name}: {' '.join(cmd)}", flush=True)
        start = time.perf_counter()
        proc = subprocess.run(cmd, **kwargs)
        self.steps[name] = self.steps.get(name, 0.0) + time.perf_counter() - start
        return proc


def recent_commits(repo_path: Path, count: int) -> list[str]:
    """The last `count` first-parent commits of HEAD, oldest first."""
    repo = git.Repo(repo_path)
    commits = list(repo.iter_commits("HEAD", max_count=count, first_parent=True))
    if not commits:
        raise SystemExit(f"{repo_path}: no commits")
    return [c.hexsha for c in reversed(commits)]


def project_name(repo_path: Path) -> str:
    """The distribution name asv must uninstall between commits."""
    pyproject = repo_path / "pyproject.toml"
    if pyproject.exists():
        match = re.search(r'^name\s*=\s*"([^"]+)"', pyproject.read_text(), re.MULTILINE)
        if match:
            return match.group(1)
    return repo_path.name


def write_config(repo_path: Path, out: Path, benchmark_dir: Path) -> Path:
    """asv.conf.json of this project, pointed at `repo_path` and `out`."""
    conf = json.loads(_strip_comments((ROOT / "asv.conf.json").read_text()))
    conf.update(
        repo=str(repo_path),
        project=project_name(repo_path),
        benchmark_dir=str(benchmark_dir),
        env_dir=str(out / "env"),
        results_dir=str(out / "results"),
        html_dir=str(out / "html"),
    )
    path = out / "asv.conf.json"
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(conf, indent=2))
    return path


def _strip_comments(text: str) -> str:
    # asv.conf.json carries // comments (asv accepts them); json does not.
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))


def ensure_machine(timings: Timings) -> None:
    if not (Path.home() / ".asv-machine.json").exists():
        timings.run("machine", [sys.executable, "-m", "asv", "machine", "--yes"], check=True)


def regressions(compare_output: str) -> list[str]:
    """Rows that asv compare marks '+' (worse, statistically significant)."""
    return [line for line in compare_output.splitlines() if line.lstrip().startswith("| +")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=ROOT, help="git repository to track (default: this one)")
    parser.add_argument("--commits", type=int, default=3, help="how many recent commits (default 3)")
    parser.add_argument("--bench", "-b", action="append", default=[], help="asv -b regex; repeatable")
    parser.add_argument("--benchmarks", type=Path, default=ROOT / "benchmarks", help="suite folder")
    parser.add_argument("--out", type=Path, default=ROOT / ".asv", help="env, results and html folder")
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: one call per benchmark, nothing saved (asv --quick --dry-run)")
    parser.add_argument("--fail-on-regression", action="store_true",
                        help="exit 1 when asv compare marks a significant slowdown")
    args = parser.parse_args(argv)

    repo_path, out = args.repo.resolve(), args.out.resolve()
    commits = recent_commits(repo_path, args.commits)
    conf = write_config(repo_path, out, args.benchmarks.resolve())
    asv = [sys.executable, "-m", "asv", "--config", str(conf)]
    benches = [a for b in args.bench for a in ("-b", b)]
    timings = Timings()
    # The suites put this tree's torchbench_core first on their path (see
    # benchmarks/__init__.py): the harness stays fixed across the history.
    env = dict(os.environ, TORCHBENCH_HARNESS=str(ROOT))

    ensure_machine(timings)
    # `asv setup` returns its list of environments as the exit status (asv
    # 0.6.6 bug: it prints the list and exits 1 on success), so check the
    # environment's interpreter instead of the code.
    timings.run("environment build", asv + ["setup"], env=env)
    if not list((out / "env").glob("*/bin/python")):
        raise SystemExit(f"asv setup did not create an environment under {out / 'env'}; see its output above")
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(commits) + "\n")
        hashfile = f.name
    run = asv + ["run", f"HASHFILE:{hashfile}", "--record-samples", "--show-stderr", *benches]
    if args.quick:
        run += ["--quick", "--dry-run"]  # asv saves --quick results otherwise
    proc = timings.run("benchmarks", run, env=env)
    os.unlink(hashfile)
    failed = proc.returncode != 0

    if not args.quick:
        timings.run("publish", asv + ["publish"], check=True, env=env)
        localize_site(out)
        regressed: list[str] = []
        if len(commits) >= 2:
            cmp = timings.run("compare", asv + ["compare", commits[-2], commits[-1], "--split"],
                              capture_output=True, text=True, env=env)
            print(cmp.stdout, cmp.stderr, sep="\n")
            regressed = regressions(cmp.stdout)
        print(split_report(timings, out, commits))
        print(f"\nsite: {out / 'html' / 'index.html'}  (serve it with: "
              f"{sys.executable} -m asv --config {conf} preview)")
        if failed:
            print("some benchmarks failed (their rows are empty in the results); the rest were saved")
        if regressed and args.fail_on_regression:
            print(f"{len(regressed)} significant regression(s) between the last two commits")
            return 1
    return 0


def localize_site(out: Path) -> None:
    """Make the published site render without internet (see site_assets)."""
    try:
        remaining = site_assets.localize(out / "html", out / "site-assets")
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        print(f"note: the site still loads its scripts from CDNs ({e})")
        return
    if remaining:
        print(f"note: the site still loads {', '.join(remaining)} from the internet")


def split_report(timings: Timings, out: Path, commits: list[str]) -> str:
    """Where the time went: environment build, per-commit install, benchmarks."""
    installs, setup_caches = [], []
    for path in sorted((out / "results").glob("*/*.json")):
        if path.name in ("machine.json", "benchmarks.json"):
            continue
        doc = json.loads(path.read_text())
        if doc.get("commit_hash") not in commits:
            continue
        for key, seconds in doc.get("durations", {}).items():
            (installs if key.startswith("<build>") else setup_caches).append(seconds)
    lines = ["\n== where the time went"]
    lines += [f"  {name:20} {seconds:8.1f} s" for name, seconds in timings.steps.items()]
    if installs:
        lines.append(f"  {'build+install/commit':20} {sum(installs) / len(installs):8.1f} s (mean of {len(installs)})")
    if setup_caches:
        lines.append(f"  {'setup_cache (counts, compile)':30} {sum(setup_caches):8.1f} s in all")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
