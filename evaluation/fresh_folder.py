"""A newcomer's first verdict: a 3x slowdown in a 3-minute budget, on a fresh output folder (issue 63).

A small library of its author's (mylib: four tensor helpers, 10-100 us a call) with an asv suite of 8 `time_`
rows written as asv's docs write one, in a repository of three commits: the base, a reworded docstring (A/A)
and a commit that makes `normalize` three times the work (its 2 rows: counts about +200%). Each pair goes
through `torchbench alert --budget-minutes 3` on an output folder that does not exist yet (its environment
built in the run, as a newcomer's first run builds it), beside `asv continuous` with its defaults on the same
pair. What it prints: the exit status, the verdict's rows, minutes to the verdict and, of them, the build's.

    python evaluation/fresh_folder.py [--out FILE.json] [--budget-minutes 3] [--no-asv] [--pairs slower aa find]
                                      [--heavy-setup SECONDS]

`--pairs find` asks the question the other way, as a newcomer's nightly job does: a linear history of four
commits (base, reworded docstring, normalize three times the work, another docstring) recorded by `torchbench
run` on a fresh folder, then `torchbench find` there, which must confirm the step at the slower commit by
re-measuring it (its rows' counts moved: confirmed by counts, as the alert decides) and name it the culprit.

With --heavy-setup 15, the suite also has two rows whose setup runs a 15 s forward pass (issue 63: every alert
ends within its budget plus one round, whatever its set-ups cost): what it prints then says whether it did.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import git

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "evaluation"))

LIBRARY = '''"""mylib: small tensor helpers."""
import torch


def normalize(x):
    """Each row scaled to unit length."""
    out = x / x.norm(dim=-1, keepdim=True).clamp_min(1e-12)
{extra}    return out


def pairwise_dist(a, b):
    """Euclidean distances between the rows of a and of b."""
    return torch.cdist(a, b)


def smooth(x, k=3):
    """A moving average of width k along the last dimension."""
    kernel = torch.ones(1, 1, k) / k
    return torch.nn.functional.conv1d(x.unsqueeze(1), kernel, padding=k // 2).squeeze(1)


def topk_mask(x, k):
    """True where an entry is among its row's k largest."""
    idx = x.topk(k, dim=-1).indices
    return torch.zeros_like(x, dtype=torch.bool).scatter_(-1, idx, True)
'''
EXTRA = ("    for _ in range(2):  # three times the work\n"
         "        out = x / x.norm(dim=-1, keepdim=True).clamp_min(1e-12)\n")
SUITE = '''import torch

import mylib


class Helpers:
    params = [16, 128]
    param_names = ["n"]

    def setup(self, n):
        torch.manual_seed(0)
        self.x = torch.randn(n, 32)
        self.y = torch.randn(n, 32)

    def time_normalize(self, n):
        mylib.normalize(self.x)

    def time_pairwise_dist(self, n):
        mylib.pairwise_dist(self.x, self.y)

    def time_smooth(self, n):
        mylib.smooth(self.x)

    def time_topk_mask(self, n):
        mylib.topk_mask(self.x, 4)
'''
# --heavy-setup: two more rows whose setup runs a model's forward pass of about SECONDS here, as a library whose
# suite times a trained model's parts does (issue 63: a real suite's set-ups ran a 15 s forward pass; counting
# could not finish them and its system-call tracing ran past the whole budget). STEPS is fitted on this machine.
HEAVY = '''

class Forward:
    params = [1, 2]
    param_names = ["layer"]
    timeout = 300

    def setup(self, layer):
        torch.manual_seed(layer)
        w, x = torch.randn(256, 256) / 16, torch.randn(256, 256)
        for _ in range({steps}):  # the model's forward pass: about {seconds:.0f} s on the machine it was fitted on
            x = torch.tanh(x @ w)
        self.x = x[:16].contiguous()

    def time_layer(self, layer):
        torch.tanh(self.x @ self.x.T)
'''


def heavy_steps(seconds: float) -> int:
    """The forward pass's steps that take about `seconds` here, natively (HEAVY's loop, timed for 0.5 s)."""
    import torch

    w, x = torch.randn(256, 256) / 16, torch.randn(256, 256)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < 0.5:
        x = torch.tanh(x @ w)
        steps += 1
    return max(1, round(steps * seconds / (time.perf_counter() - start)))


CONF = {"version": 1, "project": "mylib", "repo": ".", "environment_type": "virtualenv",
        "matrix": {"torch": ""}, "branches": ["main"], "benchmark_dir": "benchmarks"}
PYPROJECT = '''[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "mylib"
version = "0.1"
dependencies = ["torch"]

[tool.setuptools]
packages = ["mylib"]
'''
TARGET = "time_normalize"


def _first_commit(path: Path, suite: str) -> tuple[git.Repo, str]:
    """A repository at `path` on main whose first commit holds mylib, its packaging, its conf and `suite`."""
    repo = git.Repo.init(path, initial_branch="main")
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "newcomer").set_value("user", "email", "newcomer@example.com")
    files = {"pyproject.toml": PYPROJECT, "mylib/__init__.py": LIBRARY.format(extra=""),
             "benchmarks/__init__.py": "", "benchmarks/bench_helpers.py": suite,
             "asv.conf.json": json.dumps(CONF, indent=2)}
    for rel, text in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    repo.git.add(".")
    return repo, repo.index.commit("mylib and its asv suite").hexsha


def make_repo(path: Path, heavy_seconds: float = 0.0) -> tuple[str, str, str]:
    """(base, a reworded docstring, normalize three times the work), the base checked out; with
    `heavy_seconds`, the suite has HEAVY's two rows, whose setups take about that long."""
    suite = SUITE + (HEAVY.format(steps=heavy_steps(heavy_seconds), seconds=heavy_seconds) if heavy_seconds else "")
    repo, base = _first_commit(path, suite)
    (path / "mylib/__init__.py").write_text(LIBRARY.format(extra="").replace("Each row scaled", "Every row scaled"))
    repo.index.add(["mylib/__init__.py"])
    docs = repo.index.commit("reword a docstring").hexsha
    repo.git.checkout("--detach", base)
    (path / "mylib/__init__.py").write_text(LIBRARY.format(extra=EXTRA))
    repo.index.add(["mylib/__init__.py"])
    slower = repo.index.commit("normalize: three times the work").hexsha
    repo.git.checkout("--detach", base)
    return base, docs, slower


def make_history(path: Path) -> list[str]:
    """A linear history on main: base, a reworded docstring, normalize three times the work, another reworded
    docstring (the step: at the third commit). Its commits, oldest first."""
    repo, base = _first_commit(path, SUITE)
    shas = [base]
    library = LIBRARY.format(extra="")
    for subject, (old, new) in (("reword a docstring", ("Each row scaled", "Every row scaled")),
                                ("normalize: three times the work", ("    return out\n", EXTRA + "    return out\n")),
                                ("reword another docstring", ("Euclidean distances", "Distances"))):
        library = library.replace(old, new, 1)  # each commit on the one before: the slowdown stays
        (path / "mylib/__init__.py").write_text(library)
        repo.index.add(["mylib/__init__.py"])
        shas.append(repo.index.commit(subject).hexsha)
    return shas


def find_on_a_fresh_folder(tmp: Path, budget_minutes: float) -> dict:
    """`torchbench run` over make_history's four commits on a folder that does not exist yet, then `torchbench
    find` there: what each printed and took, and whether the step was confirmed at the slower commit, by what."""
    path = tmp / "mylib-history"
    path.mkdir()
    shas = make_history(path)
    out = tmp / "fresh-find"
    row = {"pair": "find: normalize three times the work, in a 4-commit history"}
    start = time.perf_counter()
    ran = subprocess.run([sys.executable, "-m", "torchbench", "run", "--repo", str(path), "--out", str(out),
                          "--last", "4"], capture_output=True, text=True, cwd=ROOT, check=False)
    row["run_exit"], row["run_seconds"] = ran.returncode, round(time.perf_counter() - start, 1)
    row["run_log"] = [line for line in ran.stdout.splitlines() if line.startswith(("== build", "== instruction",
                                                                                    "== counts", "== measured"))]
    if ran.returncode != 0:
        row["run_tail"] = (ran.stdout[-2000:] + ran.stderr[-2000:]).splitlines()
        return row
    start = time.perf_counter()
    found = subprocess.run([sys.executable, "-m", "torchbench", "find", "--repo", str(path), "--out", str(out),
                            "--budget-minutes", str(budget_minutes), "--no-profile"],
                           capture_output=True, text=True, cwd=ROOT, check=False)
    row["find_exit"], row["find_seconds"] = found.returncode, round(time.perf_counter() - start, 1)
    row["find_log"] = found.stdout.splitlines()[-40:]
    row["find_stderr"] = found.stderr.splitlines()[-10:]
    record = json.loads((out / "changepoints.json").read_text()) if (out / "changepoints.json").exists() else {}
    steps = record.get("steps", [])
    row["steps"] = [{k: s.get(k) for k in ("name", "before", "after", "status", "ratio")}
                    | {"confirmation": {k: (s.get("confirmation") or {}).get(k)
                                        for k in ("status", "label", "counts_delta", "ratio")},
                       "culprit": ((s.get("culprit") or {}).get("culprit") or "")[:12]}
                    for s in steps if isinstance(s, dict)]
    row["slower_commit"] = shas[2][:12]
    row["confirmed_at_the_slower_commit"] = any(
        s["status"] == "confirmed" and s["culprit"] == shas[2][:12] for s in row["steps"])
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="write the summaries here as JSON")
    parser.add_argument("--budget-minutes", type=float, default=3.0)
    parser.add_argument("--no-asv", action="store_true", help="leave out asv continuous")
    parser.add_argument("--pairs", nargs="+", default=["slower", "aa"], choices=["slower", "aa", "find"])
    parser.add_argument("--heavy-setup", type=float, default=0.0, metavar="SECONDS",
                        help="add two rows whose setup runs a forward pass of about SECONDS (issue 63's 15 s)")
    args = parser.parse_args()
    from track_suite import beside_asv, summary

    found = []
    with tempfile.TemporaryDirectory(prefix="fresh-folder-") as tmp_name:
        tmp = Path(tmp_name)
        path = tmp / "mylib"
        path.mkdir()
        base, docs, slower = make_repo(path, args.heavy_setup)
        for key in args.pairs:
            if key == "find":
                row = find_on_a_fresh_folder(tmp, args.budget_minutes)
                found.append(row)
                print(json.dumps(row, indent=1), flush=True)
                continue
            name, head, target = {"slower": ("normalize three times the work", slower, TARGET),
                                  "aa": ("A/A (a reworded docstring)", docs, None)}[key]
            out = tmp / f"fresh-{key}"  # a folder of its own, made by the run: its environment built in it
            report = out.parent / f"fresh-{key}.json"
            start = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "torchbench", "alert", "--repo", str(path), "--base", base,
                                   "--head", head, "--out", str(out), "--budget-minutes", str(args.budget_minutes),
                                   "--no-profile", "--json", str(report)], capture_output=True, text=True,
                                  cwd=ROOT, check=False)
            seconds = time.perf_counter() - start
            if not report.exists():
                sys.exit(f"torchbench alert exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
            row = summary(name, json.loads(report.read_text()), seconds, target)
            row["exit"] = proc.returncode
            # the rounds' end times ("== round N: ..., S s"): did the alert end within its budget plus one round?
            ends = [float(m.group(1)) for m in re.finditer(r"^== round \d+: .*?(\d+) s$", proc.stdout, re.M)]
            longest = max((b - a for a, b in zip([0.0] + ends, ends)), default=0.0)
            row["budget_seconds"], row["longest_round_seconds"] = args.budget_minutes * 60, longest
            row["within_budget_and_a_round"] = seconds <= args.budget_minutes * 60 + longest
            row["log"] = [line for line in proc.stdout.splitlines()
                          if line.startswith(("== build", "== instruction", "   per row", "== round"))][-12:]
            row["notes"] = [n for n in json.loads(report.read_text()).get("notes", [])
                            if n.startswith(("instruction counts", "system calls", "wall time"))]
            if not args.no_asv:
                row["asv_continuous"] = beside_asv(out, tmp / f"asv-{key}", base, head, target)
            found.append(row)
            print(json.dumps(row, indent=1), flush=True)
    if args.out:
        args.out.write_text(json.dumps(found, indent=1))


if __name__ == "__main__":
    main()
