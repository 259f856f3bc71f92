"""Rows are named as the user wrote them (issue 48 item 4): a plain asv suite's row is its benchmark's name and
parameters as asv 0.6.6 prints them (`asv compare`'s unroll_result: name(repr, repr, ...)), in the alert's
comment, JSON and verdict page and in the history's rows; Compare's shorter placement (sub_label ·
description (label)) only for a suite that declares its parameters the task-spec fields (TimerSuite).

The suite is listed by the alert's own worker (asv_runner's discovery, a real process); the result file is
written by asv's own Results API.
"""

from __future__ import annotations

import datetime
import os
import sys

from asv.commands.compare import unroll_result

from torchbench.ab.evidence import Evidence
from torchbench.ab.options import Policy
from torchbench.ab.pair import evidence_from_results, select_jobs
from torchbench.ab.verdict import decide
from torchbench.alert.comment import AlertReport, md
from torchbench.asv_bridge import results
from torchbench.asv_bridge.worker import list_benchmarks
from torchbench.project.commits import Commit

SUITE = '''
from torchbench_core.asv_suite import TimerSpec, TimerSuite


def dense_softmax(x):
    return x


class Softmax:
    """As the issue's library keeps it: a function, a flag, a shape and a device (not a thread count)."""

    params = ([dense_softmax], [True], [(10000, 200000)], ["cpu", "cuda"])
    param_names = ["fn", "contiguous", "shape", "device"]

    def track_fwd(self, fn, contiguous, shape, device):
        return 1.0


class Dispatch(TimerSuite):
    timers = [TimerSpec("x + x", setup="x = 1", label="add", sub_label="int", description="1 + 1")]
'''
SOFTMAX = "softmax.Softmax.track_fwd"
ASV_NAMES = [f"{SOFTMAX}(<function dense_softmax>, True, (10000, 200000), 'cpu')",
             f"{SOFTMAX}(<function dense_softmax>, True, (10000, 200000), 'cuda')"]


def _asv_names(name: str, params: list[list[str]]) -> list[str]:
    """How asv itself names each parameter combination of a benchmark (asv compare's table)."""
    return [row[0] for row in unroll_result(name, params, None)]


def test_plain_rows_are_titled_as_asv_prints_them_and_timer_suite_rows_in_compare_layout(tmp_path):
    suite = tmp_path / "benchmarks"
    suite.mkdir()
    (suite / "__init__.py").write_text("")
    (suite / "softmax.py").write_text(SUITE)
    listed = list_benchmarks(sys.executable, suite, dict(os.environ))
    (softmax,) = [b for b in listed if b["name"] == SOFTMAX]
    assert _asv_names(SOFTMAX, softmax["params"]) == ASV_NAMES  # the names below are asv's own
    evidence = Evidence(counts_off="no counts: a test of names")
    jobs = select_jobs({"base": listed, "head": listed}, [], evidence)
    for side in ("base", "head"):
        for job in jobs:
            for value in (1.0, 1.0):
                evidence.add_value(side, job, value)
    report = AlertReport(Commit("a" * 40, "base"), Commit("b" * 40, "head"), decide(evidence, Policy()), Policy(), 2)
    titles = sorted(r.title for r in report.rows)
    assert titles == sorted(ASV_NAMES + ["int · 1 + 1 (add)"]), titles
    doc = report.to_dict()
    assert sorted(r["title"] for r in doc["rows"]) == titles
    text = report.markdown()
    assert all(md(name) in text for name in ASV_NAMES)
    assert "threads" not in text  # no unit invented for a parameter
    page = report.verdicts_html({})
    assert "softmax.Softmax.track_fwd(&lt;function dense_softmax&gt;, True, (10000, 200000), &#39;cpu&#39;)" in page


def _result_file(folder, name: str, params: list[list[str]], param_names: list[str], values: list[float]):
    """A results folder of one file written by asv's own Results API."""
    from asv import util
    from asv.benchmarks import Benchmarks
    from asv.results import Results
    from asv.runner import BenchmarkResult

    (folder / "vm").mkdir(parents=True)
    util.write_json(str(folder / "vm" / "machine.json"), {"machine": "vm", "arch": "x86_64", "cpu": "",
                                                          "num_cpu": "2", "os": "Linux", "ram": ""}, api_version=1)
    benchmarks = {name: {"name": name, "type": "track", "unit": "seconds", "version": "1", "code": "",
                         "param_names": param_names, "params": params}}
    util.write_json(str(folder / "benchmarks.json"), benchmarks, api_version=Benchmarks.api_version)
    res = Results({"machine": "vm", "python": "3.11"}, {}, "c" * 40, 1_700_000_000_000, "3.11", "existing-py", {})
    res.add_result(benchmarks[name], BenchmarkResult(result=values, samples=[None] * len(values),
                                                     number=[None] * len(values), errcode=0, stderr="", profile=None),
                   started_at=datetime.datetime.now(datetime.timezone.utc), duration=1.0)
    res.save(str(folder))
    return folder


def test_a_results_files_rows_keep_asvs_names_and_a_parameter_that_is_no_literal_keeps_its_text(tmp_path):
    params = [["<function dense_softmax>"], ["True"], ["(10000, 200000)"], ["'cpu'", "'cuda'"]]
    names = ["fn", "contiguous", "shape", "device"]
    folder = _result_file(tmp_path / "results", SOFTMAX, params, names, [0.5, 0.25])
    found = results.load(folder)
    assert [r.name for r in sorted(found.rows, key=lambda r: r.index)] == _asv_names(SOFTMAX, params) == ASV_NAMES
    # the pages' Compare table of a plain suite: the benchmark, and its parameters by name, as written
    row = min(found.rows, key=lambda r: r.index)
    assert row.placement() == (SOFTMAX, "fn=<function dense_softmax>, contiguous=True, shape=(10000, 200000), "
                                         "device='cpu'", None, 1)
    evidence, _, _ = evidence_from_results([folder], [folder])  # the alert from result files names them alike
    assert sorted(r.title for r in decide(evidence, Policy())) == ASV_NAMES
