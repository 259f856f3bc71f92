"""The `__torch_function__` overhead over torch releases, and an upgrade verdict, beside asv's own figures.

One commit of this repository (default HEAD) is measured by `torchbench run --torch A --torch B ...` on
its own `__torch_function__` suite (benchmarks/torch_function.py: torch.add on a Tensor, a plain
subclass, a Tensor-like with __torch_function__, a subclass overriding it), one asv environment per
release, and published. Then:

* per release and case: the level (what step detection and our pages use), the median and asv's own
  value (the result asv stores), and the overhead over plain Tensor in ns (levels);
* the disk each release's environment takes;
* the upgrade verdict between two releases (--verdict A B, default the last two): `torchbench alert
  --base-torch A --head-torch B`, in alternating processes, beside asv's decision on the same two
  environments' `torchbench run` results (asv.commands.compare._is_result_better, factor 1.1, as
  `asv compare` applies it: asv has no command that compares environments);
* a chart of the overhead per release (SVG, drawn by torchbench's own chart code, and a PNG of it from
  headless Chromium), for the README.

    python evaluation/torch_releases.py [--releases 2.11.0 2.12.0 2.13.0 2.14.1] [--rounds 4]
                                        [--verdict-minutes 4] [--json PATH] [--chart DIR] [--keep]

2.13.0 is this machine's CPU wheel; the others are PyPI's CUDA builds (about 5.5 GB an environment;
2.14.1 lies on this machine's disk, the others download in about 30 s each) that import and run on the
CPU. Exit status 0 when every step ran, 2 when one failed (named).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from torchbench import resources, stats  # noqa: E402
from torchbench.asv_bridge import results  # noqa: E402
from torchbench.publish import charts  # noqa: E402

LABEL = "__torch_function__ overhead"
BENCHMARK = "torch_function.TorchFunctionOverhead.track_time"
BASELINE = "Tensor"
RELEASES = ["2.11.0", "2.12.0", "2.13.0", "2.14.1"]


def torchbench(*args, log: Path) -> tuple[subprocess.CompletedProcess, float]:
    start = time.perf_counter()
    with open(log, "w") as f:
        proc = subprocess.run([sys.executable, "-m", "torchbench", *map(str, args)], stdout=f, stderr=subprocess.STDOUT,
                              text=True, cwd=ROOT)
    return proc, time.perf_counter() - start


def fail(what: str, log: Path) -> None:
    sys.exit(f"FAILED: {what} (log {log}):\n{log.read_text()[-4000:]}")


def release_of(env_name: str) -> str:
    return env_name.split("torch", 1)[1].split("-", 1)[0]


def per_release(out: Path) -> dict[str, dict[str, dict]]:
    """{release: {case: {level, median, low, high, asv, n, row}}} of the overhead suite."""
    found = results.load(out / "results")
    table: dict[str, dict[str, dict]] = {}
    for row in found.rows:
        if row.benchmark != BENCHMARK or row.status != "ok":
            continue
        _, case, _, _ = row.placement()
        interval = stats.interval(row.samples or (row.value,))
        table.setdefault(release_of(row.env_name), {})[case] = {
            "level": interval.level, "median": interval.median, "low": interval.low, "high": interval.high,
            "asv": row.value, "n": interval.n, "row": row}
    return dict(sorted(table.items(), key=lambda kv: [int(p) for p in kv[0].split(".")]))


def asv_decision(a: results.Row, b: results.Row) -> str:
    """asv compare's mark for b against a: '+' slower, '-' faster, ' ' neither (its own function, factor 1.1)."""
    from asv.commands.compare import _is_result_better

    ss_a, ss_b = (a.stats, list(a.samples or [])), (b.stats, list(b.samples or []))
    if _is_result_better(b.value, a.value, ss_b, ss_a, 1.1):
        return "-"
    if _is_result_better(a.value, b.value, ss_a, ss_b, 1.1):
        return "+"
    return " "


def overhead_chart(table: dict[str, dict[str, dict]], dest: Path, work: Path) -> Path:
    """The overhead over plain Tensor per release, one line per case, drawn by our own chart code and
    template (the page in WORK, shot into DEST/torch_releases.png by headless Chromium)."""
    releases = list(table)
    cases = [c for c in next(iter(table.values())) if c != BASELINE]
    lines = []
    for case in cases:
        marks = []
        for x, release in enumerate(releases):
            cell, base = table[release].get(case), table[release].get(BASELINE)
            if not cell or not base:
                continue
            ns = (cell["level"] - base["level"]) * 1e9
            low = (cell["low"] - base["high"]) * 1e9 if not math.isnan(cell["low"]) else math.nan
            high = (cell["high"] - base["low"]) * 1e9 if not math.isnan(cell["high"]) else math.nan
            marks.append(charts.Mark(x, ns, low, high, None, f"{case} on torch {release}: {ns:.0f} ns"))
        lines.append(charts.Line(case, marks))
    chart = charts.chart(f"{LABEL}: torch.add, ns over plain Tensor (levels; bands span both intervals)", "ns",
                         lines, {x: r for x, r in enumerate(releases)})
    draw = resources.jinja_environment().get_template("chart.svg.j2").module.draw
    css = (resources.static() / "torchbench.css").as_uri()
    page = work / "torch_releases.html"
    page.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'><link rel='stylesheet' href='{css}'>"
                    f"</head><body>{draw(chart, 'r')}</body></html>")
    png = dest / "torch_releases.png"
    chromium = shutil.which("chromium")
    if chromium is None:
        sys.exit("FAILED: the chart needs headless Chromium (scripts/test.sh installs the Debian package)")
    with tempfile.TemporaryDirectory() as profile:
        proc = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                               "--disable-background-networking", "--disable-component-update", "--disable-sync",
                               "--allow-file-access-from-files", f"--user-data-dir={profile}",
                               "--window-size=780,340", f"--screenshot={png}", page.as_uri()],
                              capture_output=True, text=True, timeout=180)
    if proc.returncode != 0 or not png.exists():
        sys.exit(f"FAILED: the chart's screenshot ({page}):\n{proc.stderr[-2000:]}")
    return png


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--releases", nargs="+", default=RELEASES, help=f"default {' '.join(RELEASES)}")
    parser.add_argument("--commit", default="HEAD", help="the commit of this repository measured (default HEAD)")
    parser.add_argument("--rounds", type=int, default=4, help="processes a release (torchbench run --rounds)")
    parser.add_argument("--verdict", nargs=2, metavar=("A", "B"), help="the upgrade verdict's releases "
                        "(default: the last two)")
    parser.add_argument("--verdict-minutes", type=float, default=4.0,
                        help="the upgrade verdict's --budget-minutes (default 4: four rows decide early or not at all)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--chart", type=Path, default=ROOT / "evaluation" / "results",
                        help="where the chart goes (default evaluation/results)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="torch-releases-"))
    out, envs = tmp / "out", tmp / "envs"
    print(f"== work folder {tmp}", flush=True)
    try:
        sha = subprocess.run(["git", "rev-parse", args.commit], capture_output=True, text=True, cwd=ROOT,
                             check=True).stdout.strip()
        hashfile = tmp / "commit"
        hashfile.write_text(sha + "\n")
        run_args = ["run", "--repo", ROOT, "--hashfile", hashfile, "--benchmarks", ROOT / "benchmarks",
                    "-b", "torch_function.TorchFunctionOverhead", "--rounds", args.rounds, "--out", out,
                    "--env-dir", envs]
        for release in args.releases:
            run_args += ["--torch", release]
        print(f"== torchbench run of {sha[:8]} on torch {', '.join(args.releases)}", flush=True)
        proc, run_seconds = torchbench(*run_args, log=tmp / "run.log")
        if proc.returncode != 0:
            fail("torchbench run", tmp / "run.log")
        log = (tmp / "run.log").read_text()
        section = log.split("== environments")[1].split("\n\n")[0]
        disk = {line.split()[1]: float(line.split()[2]) for line in section.splitlines()[1:] if "GiB" in line}
        table = per_release(out)
        if set(table) != set(args.releases):
            sys.exit(f"FAILED: results for {sorted(table)}, asked for {args.releases}")

        print(f"\n== {LABEL}: torch.add per release ({args.rounds} processes a release; levels and medians in ns; "
              "asv: the value asv stored)")
        cases = list(next(iter(table.values())))
        print(f"  {'release':8} {'disk GiB':>8}  " + "  ".join(f"{c:>34}" for c in cases))
        for release, cells in table.items():
            parts = [f"{cells[c]['level'] * 1e9:6.0f} / {cells[c]['median'] * 1e9:6.0f} / asv "
                     f"{cells[c]['asv'] * 1e9:6.0f}" if c in cells else "-" for c in cases]
            print(f"  {release:8} {disk.get(release, math.nan):8.2f}  " + "  ".join(f"{p:>34}" for p in parts))
        print(f"\n== overhead over {BASELINE} (ns, levels; asv's values beside)")
        overhead = {}
        for release, cells in table.items():
            base = cells[BASELINE]
            overhead[release] = {c: {"ours_ns": (cells[c]["level"] - base["level"]) * 1e9,
                                     "asv_ns": (cells[c]["asv"] - base["asv"]) * 1e9}
                                 for c in cases if c != BASELINE and c in cells}
            print(f"  {release:8} " + "  ".join(f"{c}: {v['ours_ns']:5.0f} (asv {v['asv_ns']:5.0f})"
                                               for c, v in overhead[release].items()))

        a, b = args.verdict or args.releases[-2:]
        print(f"\n== upgrade verdict torch {a} -> {b} (torchbench alert --base-torch {a} --head-torch {b})", flush=True)
        report_file = tmp / "verdict.json"
        proc, alert_seconds = torchbench("alert", "--repo", ROOT, "--head", sha, "--base-torch", a, "--head-torch", b,
                                         "--benchmarks", ROOT / "benchmarks", "-b",
                                         "torch_function.TorchFunctionOverhead", "--no-profile", "--out", out,
                                         "--budget-minutes", args.verdict_minutes,
                                         "--env-dir", envs, "--json", report_file, log=tmp / "alert.log")
        if proc.returncode not in (0, 1) or not report_file.exists():
            fail("torchbench alert", tmp / "alert.log")
        report = json.loads(report_file.read_text())
        verdict = []
        for r in report["rows"]:
            if r["benchmark"] != BENCHMARK:
                continue
            case = str(results.param_value(r["params"][1]))  # the sub_label: (label, sub_label, description, threads)
            c = r["comparison"] or {}
            asv_a = table[a].get(case, {}).get("row")
            asv_b = table[b].get(case, {}).get("row")
            mark = asv_decision(asv_a, asv_b) if asv_a and asv_b else "?"
            asv_ratio = asv_b.value / asv_a.value if asv_a and asv_b else math.nan
            verdict.append({"case": case, "status": r["status"], "ratio": c.get("ratio"), "ci": [c.get("ci_low"),
                            c.get("ci_high")], "processes": [c.get("n_base"), c.get("n_head")],
                            "asv_ratio": asv_ratio, "asv_mark": mark})
            print(f"  {case:22} ours: {r['status']:12} {c.get('ratio') or math.nan:6.3f} "
                  f"[{c.get('ci_low') or math.nan:.3f}, {c.get('ci_high') or math.nan:.3f}] "
                  f"({c.get('n_base')}/{c.get('n_head')} processes) | asv (one run each): ratio {asv_ratio:.3f}, "
                  f"mark {mark!r}")
        print(f"  ours {alert_seconds / 60:.1f} min, {report['rounds']} rounds; the run of {len(args.releases)} "
              f"releases took {run_seconds / 60:.1f} min (environments included)")
        args.chart.mkdir(parents=True, exist_ok=True)
        chart = overhead_chart(table, args.chart, tmp)
        print(f"\nchart: {chart}")
        if args.json:
            doc = {"commit": sha, "releases": args.releases, "rounds": args.rounds, "disk_gib": disk,
                   "cells": {r: {c: {k: v for k, v in cell.items() if k != "row"} for c, cell in cells.items()}
                             for r, cells in table.items()},
                   "overhead_ns": overhead, "verdict": {"base": a, "head": b, "rows": verdict,
                                                        "minutes": alert_seconds / 60, "rounds": report["rounds"]},
                   "run_minutes": run_seconds / 60,
                   "median_overhead_ns": {r: statistics.median(v["ours_ns"] for v in o.values())
                                          for r, o in overhead.items()}}
            args.json.write_text(json.dumps(doc, indent=1, default=str))
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
