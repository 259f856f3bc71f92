"""Which cells the site colours: today's rule (stats.page_changes) beside the rule it replaced, on the same
measured histories, in one run.

    old  a Compare cell is coloured when the 99% intervals of its pooled blocks and its baseline's are
         disjoint and the medians differ by at least 5% (the landing page: the latest commit against the
         one before, the same rule on levels); the intervals are over blocks, not processes
    new  stats.page_changes: a confirmed step between the cell and its baseline, else Welch's test on the
         per-process levels with the commit's common shift taken out, Benjamini-Hochberg across the
         cells compared together, and the 5% floor; a cell past an unconfirmed step is a candidate

Histories:
* A/A (measured here unless --aa-out names one): the example library with the 63-row suite of
  evaluation/suite_validation.py added (69 rows with bench_dispatch), then --commits - 1 commits that
  edit the README only: identical measured code, so every coloured cell is noise. Measured by
  `torchbench run` with its default --rounds.
* the example's own history (--example-out: a main-job output folder, scripts/main.sh, measured at the
  default --rounds and with `torchbench find`'s confirmations), which has one real step up at
  00d31233 and one down at e275943d on the TensorLike rows.

Per history it prints: the Compare cells coloured under each rule (each label's default view, the last
five commits against the oldest of them, and the whole history against its first commit), the landing
page's coloured changes, and the commits whose cells all moved together (common mode, at least 5%);
for the example, which cells each rule colours. --json PATH writes it all.

    python evaluation/site_colours.py [--commits 6] [--example-out .torchbench] [--json PATH]

The A/A measuring takes about 15 minutes on a 2-core machine at the defaults.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import git
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "evaluation"))

from suite_validation import SUITE, SUITE_FILE, add_commit  # noqa: E402

from torchbench import stats  # noqa: E402
from torchbench.asv_bridge import results  # noqa: E402
from torchbench.project import example  # noqa: E402
from torchbench.publish import pages, publisher, steps_page  # noqa: E402

OLD_CONFIDENCE, OLD_FLOOR = 0.99, 0.05  # the replaced rule's (stats.PAGE_CONFIDENCE, PAGE_FLOOR)


def old_rule(base: stats.Interval, head: stats.Interval) -> int:
    """The replaced rule (stats.cells_differ before issue 29): +1 / -1 where the blocks' intervals are disjoint
    and the medians differ by at least the floor."""
    if any(math.isnan(v) for v in (base.low, base.high, head.low, head.high)) or base.median <= 0:
        return 0
    ratio = head.median / base.median
    if head.low > base.high and ratio >= 1 + OLD_FLOOR:
        return 1
    if head.high < base.low and ratio <= 1 / (1 + OLD_FLOOR):
        return -1
    return 0


def revisions_of(repo: Path) -> dict[str, int]:
    commits = list(reversed(list(git.Repo(repo).iter_commits("HEAD"))))
    return {c.hexsha: i for i, c in enumerate(commits)}


def evaluate(out: Path, revisions: dict[str, int]) -> dict:
    """Both rules on the history measured in OUT (its results, and find's record of steps where present)."""
    warnings: list[str] = []
    found = results.load(out / "results")
    compare_pages, series_pages = pages.build(found.rows, revisions, {})
    steps = steps_page.collect(series_pages, revisions, out, warnings)
    views = {}
    coloured: dict[str, list[str]] = {"old": [], "new": []}
    commons = set()
    for page in compare_pages:
        page_steps = [s for s in steps if s.get("series") == page.slug]
        for view, chosen in (("default", page.default_envs), ("history", [e.id for e in page.envs])):
            baselines = page.baselines(chosen)
            changes = page.changes(chosen, baselines, page_steps)
            tally = views.setdefault(view, {"cells": 0, "old": 0, "new": 0, "candidate": 0, "one process": 0})
            for key, change in changes.cells.items():
                env = page.env(key[0])
                base = page.cells[(baselines[env.group], *key[1:])].interval
                old = old_rule(base, page.cells[key].interval)
                tally["cells"] += 1
                tally["old"] += old != 0
                tally["new"] += change.direction != 0
                tally["candidate"] += change.reason == stats.CANDIDATE
                tally["one process"] += change.reason == stats.ONE_PROCESS
                where = f"{view}: {page.label} · {key[2]} · {key[3]} @ {env.short}"
                if old:
                    coloured["old"].append(f"{where} {'+' if old > 0 else '-'}")
                if change.direction:
                    coloured["new"].append(f"{where} {'+' if change.direction > 0 else '-'} ({change.reason})")
            for env_id, ratio in changes.common.items():
                if abs(math.log(ratio)) >= math.log1p(stats.PAGE_FLOOR):
                    commons.add((view, page.label, page.env(env_id).short, round(ratio, 3)))
    landing = {"changes": 0, "old": 0, "new": 0}
    for label in publisher._landing_context(compare_pages, series_pages, steps):
        for case, s in zip(label["cases"], label["series"].series):
            if case["change"] is None:
                continue
            last = s.points[-2:]
            landing["changes"] += 1
            landing["old"] += old_rule(last[0].interval, last[1].interval) != 0
            landing["new"] += case["direction"] in ("slower", "faster")
    return {"views": views, "coloured": coloured, "landing": landing,
            "common_mode": sorted(commons), "commits": len(revisions),
            "envs_per_label": {p.label: len(p.envs) for p in compare_pages},
            "processes": sorted({int(p) for p in np.concatenate([p.cells.processes for p in compare_pages])})}


def measure_aa(tmp: Path, commits: int, min_run_time: float) -> tuple[Path, dict[str, int], float]:
    """The A/A history: the example with the 63-row suite, then README-only commits; measured by
    `torchbench run` at its defaults. (output folder, revisions, minutes)."""
    path = example.materialize(tmp / "tensorlib")
    repo = git.Repo(path)
    head = add_commit(repo, repo.head.commit.hexsha, {SUITE_FILE: SUITE.format(min_run_time=min_run_time)},
                      "Add bench_suite: 63 small rows of seven ops, three types, three sizes", 1)
    for i in range(commits - 1):
        note = f"\nA note on the docs ({i + 1}).\n"
        head = add_commit(repo, head, {"README.md": lambda text, note=note: text + note}, f"README: note {i + 1}",
                          2 + i)
    repo.git.checkout("-B", "main", head)
    out = tmp / "aa-out"
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "torchbench", "run", "--repo", str(path), "--last", str(commits),
                           "--out", str(out), "--no-publish"], capture_output=True, text=True, cwd=ROOT)
    minutes = (time.perf_counter() - start) / 60
    if proc.returncode != 0:
        sys.exit(f"torchbench run of the A/A history exited {proc.returncode}:\n{proc.stdout[-3000:]}"
                 f"\n{proc.stderr[-3000:]}")
    return out, revisions_of(path), minutes


def print_history(name: str, found: dict) -> None:
    print(f"\n== {name}: {max(found['envs_per_label'].values(), default=0)} commits measured, processes per cell "
          f"{found['processes']}")
    print(f"{'view':<10}{'cells':>7}{'old rule':>14}{'new rule':>14}{'candidates':>12}{'one process':>13}")
    for view, t in found["views"].items():
        share = (lambda k: f"{t[k]} ({t[k] / t['cells']:.1%})") if t["cells"] else (lambda k: str(t[k]))
        print(f"{view:<10}{t['cells']:>7}{share('old'):>14}{share('new'):>14}{t['candidate']:>12}"
              f"{t['one process']:>13}")
    land = found["landing"]
    print(f"landing page changes: {land['changes']}, coloured by the old rule {land['old']}, by the new {land['new']}")
    print(f"commits with a common-mode shift >= {stats.PAGE_FLOOR:.0%}: {len(found['common_mode'])}"
          + "".join(f"\n   {v}: {label} @ {short} x{ratio}" for v, label, short, ratio in found["common_mode"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=6, help="commits of identical code in the A/A history")
    parser.add_argument("--min-run-time", type=float, default=0.1, help="each suite row's, per process (0.1 s)")
    parser.add_argument("--aa-out", type=Path, help="an A/A history measured before (with --keep): not measured again")
    parser.add_argument("--aa-repo", type=Path, help="its repository (for the commit order)")
    parser.add_argument("--example-out", type=Path, help="a main-job output folder (scripts/main.sh)")
    parser.add_argument("--no-aa", action="store_true", help="only the example's history")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (its path is printed)")
    parser.add_argument("--json", type=Path, metavar="PATH")
    args = parser.parse_args()
    report = {}
    tmp = Path(tempfile.mkdtemp(prefix="site-colours-"))
    try:
        if args.example_out:
            repo = args.example_out / "example" / "tensorlib"
            found = evaluate(args.example_out, revisions_of(repo))
            print_history("the example's history", found)
            for rule in ("old", "new"):
                print(f"coloured by the {rule} rule:" + "".join(f"\n   {c}" for c in found["coloured"][rule]))
            report["example"] = found
        if not args.no_aa:
            if args.aa_out:
                out, revisions, minutes = args.aa_out, revisions_of(args.aa_repo), None
            else:
                print(f"== measuring the A/A history in {tmp} ({args.commits} commits)", flush=True)
                out, revisions, minutes = measure_aa(tmp, args.commits, args.min_run_time)
            found = evaluate(out, revisions)
            found["minutes"] = minutes
            print_history(f"A/A: {args.commits} commits of identical code"
                          + (f" (measured in {minutes:.1f} min)" if minutes else ""), found)
            report["aa"] = found
        if args.json:
            args.json.write_text(json.dumps(report, indent=1, default=str))
    finally:
        if args.keep:
            print(f"(work folder {tmp} kept)")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
