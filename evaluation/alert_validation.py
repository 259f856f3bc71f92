"""Validation of `torchbench alert` on this machine, beside `asv continuous` on the same pairs (issue 8).

* A/A: pairs of commits of the example library that change nothing measured
  (docs only, tests only); every flagged row is a false alert.
* Power: slowdowns of 5%, 10% and 30% injected into TensorLike.__torch_function__
  (a calibrated busy loop, on top of the last commit): the two TensorLike rows
  must be flagged, and nothing else.
* Minutes to a verdict, and the minimum detectable effect per benchmark.

asv continuous runs with its defaults (factor 1.1, its Mann-Whitney test) in the
same environment; its flagged rows are counted with asv's own decision function
(asv.commands.compare._is_result_better, as Compare.print_table applies it).

    python evaluation/alert_validation.py [--repeats 2] [--budget-minutes 9]
"""

from __future__ import annotations

import argparse
import json
import math
import re
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
from torchbench.asv_bridge.driver import Asv, Timings, harness_env  # noqa: E402
from torchbench.project import example  # noqa: E402

LOOP = "        for _ in range({k}):  # injected slowdown\n            pass\n"
ANCHOR = "        if kwargs is None:\n            kwargs = {}\n"


def calibrate(site: Path, python: Path, processes: int = 7) -> tuple[float, float]:
    """(TensorLike add time, seconds per busy-loop iteration), measured in `python` on the last commit.

    Processes land in a fast or a ~1.8x slower cluster here; the alert compares lower quartiles,
    which sit in the fast cluster, so the injection is sized against the fastest of several processes.
    """
    measured = [_calibrate_once(site, python) for _ in range(processes)]
    return min(m[0] for m in measured), min(m[1] for m in measured)


def _calibrate_once(site: Path, python: Path) -> tuple[float, float]:
    code = f"""
import json, sys
sys.path.insert(0, {str(site)!r})
import torch, tensorlib
import torchbench_core as tb
a, b = tensorlib.TensorLike([1.0]), tensorlib.TensorLike([2.0])
base = tb.Timer("torch.add(a, b)", globals={{"a": a, "b": b}}).blocked_autorange(min_run_time=1).median
def spin(k):
    for _ in range(k):
        pass
loop = tb.Timer("spin(1000)", globals={{"spin": spin}}).blocked_autorange(min_run_time=1).median / 1000
print(json.dumps([base, loop]))
"""
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True, env=harness_env())
    return tuple(json.loads(out.stdout))


def inject(repo: git.Repo, base_sha: str, k: int, label: str) -> str:
    repo.git.checkout("--detach", base_sha)
    path = Path(repo.working_dir) / "tensorlib" / "tensor_like.py"
    text = path.read_text()
    assert ANCHOR in text, "the example's TensorLike.__torch_function__ changed; update the injection anchor"
    path.write_text(text.replace(ANCHOR, ANCHOR + LOOP.format(k=k), 1))
    repo.index.add(["tensorlib/tensor_like.py"])
    sha = repo.index.commit(f"inject a {label} slowdown ({k} loop iterations)").hexsha
    repo.git.checkout("--detach", base_sha)
    return sha


def alert(repo: Path, base: str, head: str, out: Path, envs: Path, budget: float) -> tuple[dict, float]:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "torchbench", "alert", "--repo", str(repo), "--base", base,
                           "--head", head, "--out", str(out), "--env-dir", str(envs), "--no-counts",
                           "--budget-minutes", str(budget), "--json", str(out / "report.json")],
                          capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        sys.exit(f"torchbench alert failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    return json.loads((out / "report.json").read_text()), wall


def asv_conf(template: Path, dest: Path) -> Path:
    """The alert's asv configuration (same repository, suite and environments), with results under DEST."""
    dest.mkdir(parents=True)
    doc = json.loads(template.read_text())
    doc.update(results_dir=str(dest / "results"), html_dir=str(dest / "html"))
    conf = dest / "asv.conf.json"
    conf.write_text(json.dumps(doc, indent=1))
    return conf


def asv_continuous(conf: Path, base: str, head: str) -> tuple[dict[str, str], float]:
    """asv continuous with its defaults; {row name: '+'/'-'/' '} by asv's own decision function."""
    from asv.commands.compare import _is_result_better

    Asv(conf, Timings()).ensure_machine()  # a fresh machine has no asv machine file: asv would stop and ask
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "asv", "continuous", base, head, "--config", str(conf)],
                          capture_output=True, text=True, cwd=ROOT, env=harness_env())
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        sys.exit(f"asv continuous failed:\n{proc.stdout[-3000:]}")
    found = results.load(conf.parent / "results", commits={base, head})
    if not found.rows:
        sys.exit(f"asv continuous saved no results:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    rows: dict[str, dict[str, results.Row]] = {}
    for row in found.rows:
        rows.setdefault(row.name, {})[row.commit] = row
    marks = {}
    for name, by_commit in rows.items():
        a, b = by_commit.get(base), by_commit.get(head)
        if not a or not b or a.status != "ok" or b.status != "ok":
            continue
        ss_a, ss_b = (a.stats, list(a.samples or [])), (b.stats, list(b.samples or []))
        if _is_result_better(b.value, a.value, ss_b, ss_a, 1.1):
            marks[name] = "-"
        elif _is_result_better(a.value, b.value, ss_a, ss_b, 1.1):
            marks[name] = "+"
        else:
            marks[name] = " "
    return marks, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--budget-minutes", type=float, default=9.0, help="the alert's (default: its default, 9)")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="alert-validation-"))
    envs = tmp / "envs"
    try:
        path = example.materialize(tmp / "tensorlib")
        repo = git.Repo(path)
        shas = [c.hexsha for c in reversed(list(repo.iter_commits("HEAD")))]
        # one alert to build the environment and the last commit's install, then calibrate there
        alert(path, shas[4], shas[5], tmp / "warm", envs, 0.1)
        python = next(envs.glob("*/bin/python"))
        site = tmp / "warm" / "installs" / shas[5][:12]  # where the workspace installed the last commit
        t_add, t_iter = calibrate(site, python)
        print(f"calibration: TensorLike torch.add {t_add * 1e6:.2f} us; one loop iteration {t_iter * 1e9:.1f} ns")
        injected = {p: inject(repo, shas[5], max(1, round(p * t_add / t_iter)), f"{p:.0%}") for p in (0.05, 0.10, 0.30)}

        pairs = [("A/A docs only", shas[0], shas[1], None), ("A/A tests only", shas[4], shas[5], None)]
        pairs += [(f"+{p:.0%} injected", shas[5], sha, p) for p, sha in injected.items()]
        ours, theirs = [], []
        for rep in range(args.repeats):
            for name, base, head, effect in pairs:
                report, wall = alert(path, base, head, tmp / f"ours-{rep}-{len(ours)}", envs, args.budget_minutes)
                ours.append((name, effect, report, wall))
                conf = tmp / f"ours-{rep}-{len(ours) - 1}" / "asv.conf.json"
                asv_out = tmp / f"asv-{rep}-{len(theirs)}"
                asv_out.mkdir()
                doc = json.loads(conf.read_text())
                doc["results_dir"], doc["html_dir"] = str(asv_out / "results"), str(asv_out / "html")
                (asv_out / "asv.conf.json").write_text(json.dumps(doc))
                marks, awall = asv_continuous(asv_out / "asv.conf.json", base, head)
                theirs.append((name, effect, marks, awall))
                ratios = ", ".join(f"{r['comparison']['ratio']:.3f}" for r in report["rows"]
                                   if _is_target(r["title"]) and r["comparison"])
                print(f"  {name:18} ours: {report['counts']} (TensorLike ratios {ratios}), {wall / 60:.1f} min | asv continuous: "
                      f"{sum(m != ' ' for m in marks.values())}/{len(marks)} flagged, {awall / 60:.1f} min", flush=True)
        report_table(ours, theirs)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _is_target(title_or_name: str) -> bool:
    return "TensorLike" in title_or_name


def report_table(ours, theirs) -> None:
    print("\n== false alerts on identical code (A/A), power on injected slowdowns, minutes to a verdict")
    print(f"  {'pairs':22} {'ours: flagged/rows':>20} {'asv continuous':>16} {'ours min':>9} {'asv min':>8}")
    groups = {}
    for (name, effect, report, wall), (_, _, marks, awall) in zip(ours, theirs):
        g = groups.setdefault("A/A" if effect is None else name, {"o": [0, 0], "a": [0, 0], "ow": [], "aw": [],
                                                                  "other_o": 0, "other_a": 0, "mde": []})
        if effect is None:
            g["o"][0] += sum(r["status"] in ("regressed", "improved") for r in report["rows"])
            g["o"][1] += len(report["rows"])
            g["a"][0] += sum(m != " " for m in marks.values())
            g["a"][1] += len(marks)
        else:
            targets = [r for r in report["rows"] if _is_target(r["title"])]
            g["o"][0] += sum(r["status"] == "regressed" for r in targets)
            g["o"][1] += len(targets)
            g["other_o"] += sum(r["status"] in ("regressed", "improved") for r in report["rows"]
                                if not _is_target(r["title"]))
            g["a"][0] += sum(m == "+" for n, m in marks.items() if _is_target(n))
            g["a"][1] += sum(1 for n in marks if _is_target(n))
            g["other_a"] += sum(m != " " for n, m in marks.items() if not _is_target(n))
        g["ow"].append(wall / 60)
        g["aw"].append(awall / 60)
        g["mde"] += [(r["title"], r["comparison"]["mde"]) for r in report["rows"] if r["comparison"]]
    for name, g in groups.items():
        what = "false alerts" if name == "A/A" else "detected"
        extra = "" if name == "A/A" else f"   (other rows flagged: ours {g['other_o']}, asv {g['other_a']})"
        print(f"  {name + ' ' + what:22} {g['o'][0]:>9}/{g['o'][1]:<10} {g['a'][0]:>7}/{g['a'][1]:<8} "
              f"{statistics.median(g['ow']):9.1f} {statistics.median(g['aw']):8.1f}{extra}")
    print("\n== minimum detectable effect per benchmark (ours, 80% power; median over runs)")
    per = {}
    for g in groups.values():
        for title, mde in g["mde"]:
            if mde is not None and math.isfinite(mde):
                per.setdefault(title, []).append(mde)
    for title, values in sorted(per.items()):
        print(f"  {re.sub(' +', ' ', title):60} {statistics.median(values):6.1%}")


if __name__ == "__main__":
    main()
