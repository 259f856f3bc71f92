"""Rows this machine cannot run are skipped, listed with their reason, and fail nothing (issue 48 item 3).

A plain asv suite as a user keeps it: a `device` parameter of "cpu" and "cuda" (this machine has no CUDA
device: torch 2.13.0+cpu says "Torch not compiled with CUDA enabled"), a setup that raises
NotImplementedError for some combinations (asv's skip), a `track_` method that times with
torch.utils.benchmark.Timer, and a row that asks for CUDA on the head side only (a change that breaks the
row on this machine: a failure, since the base ran it here). Real processes throughout: the alert's own
workers (two installs of a module, as base and head), and `torchbench run` through asv.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path

import git
import jsonschema
import pytest

from e2e import ROOT, explain
from torchbench.ab.options import Policy, Rounds
from torchbench.ab.pair import evidence_from_results, select_jobs
from torchbench.ab.collect import collect_counts
from torchbench.ab.evidence import Evidence, JobInfo, Side
from torchbench.ab.rounds import measure_rounds
from torchbench.ab.sides import side_env
from torchbench.ab.verdict import FAILED, SKIPPED, decide
from torchbench.alert.comment import FAILED_OUTCOME, UNDECIDED, AlertReport
from torchbench.asv_bridge import results
from torchbench.asv_bridge.worker import list_benchmarks
from torchbench.errors import EXIT_FAILURE, EXIT_OK
from torchbench.project.commits import Commit
from torchbench_core.skips import SKIPPED_BY_METHOD

SUITE = '''
import torch
from torch.utils.benchmark import Timer

import variant


def dense_softmax(x):
    return torch.softmax(x, dim=-1)


class Softmax:
    params = ([dense_softmax], [True, False], ["cpu", "cuda"])
    param_names = ["fn", "contiguous", "device"]

    def setup(self, fn, contiguous, device):
        if not contiguous:
            raise NotImplementedError("no strided inputs yet")
        self.x = torch.randn(64, 64, device=device)

    def time_fwd(self, fn, contiguous, device):
        fn(self.x)

    def track_fwd(self, fn, contiguous, device):
        return Timer("fn(x)", globals={"fn": fn, "x": self.x}).blocked_autorange(min_run_time=0.01).median


class Moved:
    def setup(self):
        self.x = torch.ones(8)

    def time_add(self):
        variant.add(self.x)
'''
BASE_VARIANT = "def add(x):\n    return x + x\n"
HEAD_VARIANT = "def add(x):\n    return x.cuda() + x\n"  # asks for a CUDA device: on the head side only
NO_CUDA = "skipped here: no CUDA device"
ASV_SKIP = "skipped by its setup (NotImplementedError, asv's skip)"
SCHEMA = json.loads((ROOT / "torchbench" / "schemas" / "alert.schema.json").read_text())


def _name(method: str, contiguous: bool, device: str) -> str:
    return f"softmax.Softmax.{method}(<function dense_softmax>, {contiguous}, '{device}')"


def _sides(tmp_path: Path) -> tuple[Path, dict[str, Side]]:
    suite = tmp_path / "benchmarks"
    suite.mkdir()
    (suite / "__init__.py").write_text("")
    (suite / "softmax.py").write_text(SUITE)
    sides = {}
    for name, variant in (("base", BASE_VARIANT), ("head", HEAD_VARIANT)):
        install = tmp_path / name
        install.mkdir()
        (install / "variant.py").write_text(variant)
        sides[name] = Side(name, name[0] * 40, install, Path(sys.executable))
    return suite, sides


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """Two rounds of the alert's alternating processes on the suite, and the counting worker's answers for the
    rows this machine cannot run (natively: none of them reaches valgrind)."""
    tmp_path = tmp_path_factory.mktemp("skipped")
    suite, sides = _sides(tmp_path)
    evidence = Evidence(counts_off="no counts: --no-counts")
    listed = list_benchmarks(sys.executable, suite, side_env(sides["base"]))  # the same suite file on both sides
    jobs = select_jobs({"base": listed, "head": listed}, [], evidence)
    counted = Evidence(jobs=evidence.jobs)
    cannot = [job for job in jobs if job[0].startswith("softmax.Softmax.") and job[1] != 0]  # all but 'cpu', True
    tally = collect_counts(suite, sides["base"], cannot, counted, cache_dir=tmp_path / "counts")
    measure_rounds(suite, sides, jobs, evidence, rounds=Rounds(min_rounds=2, max_rounds=2, counts=False,
                                                               until_reachable=False),
                   policy=Policy(), deadline=time.monotonic() + 600, cache_dir=tmp_path / "cache")
    evidence.rounds = 2
    return evidence, (tally, counted)


def _report(evidence: Evidence) -> AlertReport:
    return AlertReport(Commit("a" * 40, "base"), Commit("b" * 40, "head"), decide(evidence, Policy()), Policy(),
                       evidence.rounds)


@pytest.mark.slow
def test_rows_without_a_cuda_device_or_skipped_by_setup_are_listed_skipped_on_both_sides(measured):
    evidence, _ = measured
    report = _report(evidence)
    rows = {r.name: r for r in report.rows}
    for method in ("time_fwd", "track_fwd"):
        assert rows[_name(method, True, "cuda")].status == SKIPPED, rows[_name(method, True, "cuda")]
        assert rows[_name(method, True, "cuda")].error == NO_CUDA
        for device in ("cpu", "cuda"):
            assert (rows[_name(method, False, device)].status, rows[_name(method, False, device)].error) == \
                (SKIPPED, ASV_SKIP)
        assert rows[_name(method, True, "cpu")].comparison is not None  # the CPU row is measured and compared
    for side in ("base", "head"):  # each side's own workers said so
        assert evidence.skips[side][("softmax.Softmax.time_fwd", 1)] == NO_CUDA
        assert not evidence.errors[side].get(("softmax.Softmax.time_fwd", 1))
    text = report.markdown()
    assert "**Skipped**" in text and "· 6 skipped" in text
    assert f"{_name('track_fwd', True, 'cuda')}: {NO_CUDA}".replace("_", "\\_").replace("<", "&lt;") \
        .replace(">", "&gt;") in text
    doc = json.loads(report.json())
    jsonschema.validate(doc, SCHEMA)
    skipped = {r["title"]: r["error"] for r in doc["rows"] if r["status"] == SKIPPED}
    assert skipped[_name("time_fwd", True, "cuda")] == NO_CUDA and len(skipped) == 6


@pytest.mark.slow
def test_a_row_that_needs_cuda_on_one_side_only_still_fails_the_verdict(measured):
    evidence, _ = measured
    report = _report(evidence)
    (moved,) = [r for r in report.rows if r.name == "softmax.Moved.time_add"]
    assert moved.status == FAILED and moved.error == f"head: {NO_CUDA}, but the base ran it on this machine"
    assert report.outcome() == FAILED_OUTCOME and report.exit_status() == EXIT_FAILURE
    assert report.headline() == "⚠️ 1 benchmark(s) failed"  # the skipped rows are not counted as failures


@pytest.mark.slow
def test_skipped_rows_alone_fail_neither_the_verdict_nor_the_exit_status(measured):
    evidence, _ = measured
    without = {job: info for job, info in evidence.jobs.items() if job != ("softmax.Moved.time_add", 0)}
    report = _report(dataclasses.replace(evidence, jobs=without))  # the same evidence without the row that failed
    assert report.outcome() != FAILED_OUTCOME and report.exit_status() == EXIT_OK, report.headline()
    assert "failed" not in report.headline() and report.headline().endswith("; 6 skipped")


@pytest.mark.slow
def test_the_counting_worker_skips_them_too(measured):
    _, (tally, counted) = measured
    assert tally["failed"] == tally["counted"] == 0, (tally, counted.notes)  # skipped, not a counting failure
    assert not counted.notes and not counted.uncounted["base"], (counted.notes, counted.uncounted)


@pytest.mark.slow
def test_the_history_skips_them_as_asv_does_and_exits_0(tmp_path):
    """`torchbench run` through asv (--existing: this interpreter, nothing to build): the CUDA rows are asv's
    skip (NaN) in the results, their reasons in the outcome record and the report; the run exits 0. An alert
    decided from those result files (`--base-results`) lists them skipped too."""
    repo = tmp_path / "lib"
    (repo / "benchmarks").mkdir(parents=True)
    (repo / "benchmarks" / "__init__.py").write_text("")
    (repo / "benchmarks" / "softmax.py").write_text(SUITE.replace("import variant\n", ""))
    handle = git.Repo.init(repo, initial_branch="main")
    with handle.config_writer() as cw:
        cw.set_value("user", "name", "t").set_value("user", "email", "t@example.com")
    handle.index.add(["benchmarks/__init__.py", "benchmarks/softmax.py"])
    sha = handle.index.commit("a suite with a device parameter").hexsha
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "torchbench", "run", "--existing", sys.executable, "--commit", sha,
                           "--repo", repo, "--benchmarks", repo / "benchmarks", "-b", "Softmax", "--rounds", "1",
                           "--no-counts", "--no-publish", "--out", out], capture_output=True, text=True, cwd=ROOT,
                          timeout=600)
    assert proc.returncode == 0, explain(proc)
    assert "everything was measured (exit status 0)" in proc.stdout
    assert f"{sha[:8]} a suite with a device parameter: 2 measured, 6 skipped" in proc.stdout
    for method in ("time_fwd", "track_fwd"):
        assert f"skipped {_name(method, True, 'cuda')}: {NO_CUDA} (1 commit)" in proc.stdout
        assert f"skipped {_name(method, False, 'cpu')}: {ASV_SKIP} (1 commit)" in proc.stdout
    found = results.load(out / "results")
    status = {r.name: r.status for r in found.rows}
    assert status[_name("track_fwd", True, "cuda")] == "skipped" and status[_name("track_fwd", True, "cpu")] == "ok"
    (outcome,) = found.outcomes.values()
    assert not outcome.failures and outcome.skipped["softmax.Softmax.track_fwd"] == {1: NO_CUDA, 2: ASV_SKIP,
                                                                                   3: ASV_SKIP}
    (machine,) = [d for d in (out / "results").iterdir() if d.is_dir()]
    evidence, _, _ = evidence_from_results([machine], [machine])
    rows = {r.name: r for r in decide(evidence, Policy())}
    assert (rows[_name("track_fwd", True, "cuda")].status, rows[_name("track_fwd", True, "cuda")].error) == \
        (SKIPPED, NO_CUDA)
    assert (rows[_name("time_fwd", False, "cpu")].status, rows[_name("time_fwd", False, "cpu")].error) == \
        (SKIPPED, ASV_SKIP)
    assert sum(r.status == SKIPPED for r in rows.values()) == 6  # (one process a side: the CPU rows cannot compare)


def test_a_suite_this_machine_cannot_run_at_all_is_undecided_never_passed():
    """Only skipped rows (a CUDA-only suite on a CPU runner): nothing was compared, so no ✅; exit status 0 (the
    undecided policy's), and the JSON says why each row is skipped."""
    evidence = Evidence(counts_off="no counts: --no-counts")
    job = ("softmax.Softmax.time_fwd", 0)
    name = "softmax.Softmax.time_fwd(<function dense_softmax>, 'cuda')"
    for side in ("base", "head"):
        evidence.add_job(job, JobInfo(name, ["<function dense_softmax>", "'cuda'"], ["fn", "device"], "seconds"), side)
        evidence.skip(side, job, NO_CUDA)
    report = _report(evidence)
    assert report.headline() == "⚠️ nothing compared: all 1 row(s) skipped" and "✅" not in report.markdown()
    assert report.outcome() == UNDECIDED and report.exit_status() == EXIT_OK
    assert AlertReport(report.base, report.head, report.rows, Policy(undecided_exit=3), 0).exit_status() == 3
    (row,) = json.loads(report.json())["rows"]
    assert (row["title"], row["status"], row["error"]) == (name, SKIPPED, NO_CUDA)


BODY_SUITE = '''
from asv_runner.benchmarks.mark import SkipNotImplemented


class Planned:
    def time_kernel(self):
        raise SkipNotImplemented("not on this backend")


class Missing:
    def time_spmm(self):
        raise NotImplementedError("no sparse kernel yet")
'''


@pytest.mark.slow
def test_a_method_skips_only_as_asv_runner_does(tmp_path):
    """Issue 62 item 5: asv_runner 0.3's run skips a case whose setup raises NotImplementedError or whose method
    raises SkipNotImplemented; a plain NotImplementedError raised by the method is a failure there, so here too
    (it was listed "skipped by its setup", which it was not). The alert's own workers, two rounds."""
    suite = tmp_path / "benchmarks"
    suite.mkdir()
    (suite / "__init__.py").write_text("")
    (suite / "body.py").write_text(BODY_SUITE)
    sides = {name: Side(name, name[0] * 40, tmp_path, Path(sys.executable)) for name in ("base", "head")}
    evidence = Evidence(counts_off="no counts: --no-counts")
    listed = list_benchmarks(sys.executable, suite, side_env(sides["base"]))
    jobs = select_jobs({"base": listed, "head": listed}, [], evidence)
    measure_rounds(suite, sides, jobs, evidence, rounds=Rounds(min_rounds=2, max_rounds=2, counts=False,
                                                               until_reachable=False),
                   policy=Policy(), deadline=time.monotonic() + 300, cache_dir=tmp_path / "cache")
    evidence.rounds = 2
    rows = {r.name: r for r in _report(evidence).rows}
    planned, missing = rows["body.Planned.time_kernel"], rows["body.Missing.time_spmm"]
    assert (planned.status, planned.error) == (SKIPPED, SKIPPED_BY_METHOD), planned
    assert missing.status == FAILED and "NotImplementedError: no sparse kernel yet" in missing.error, missing
    assert "skipped by its setup" not in (missing.error or "")
