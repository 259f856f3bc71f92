"""The alert's four outcomes (regression, no regression, undecided, failed): each one's headline, exit status,
JSON `outcome` and comment, the comments held against golden fixtures.

The verdicts are the alert's own (ab.verdict.decide, default policy) on real per-process values:
tests/data/alert_pool_12_rounds.json's six dispatch cases measured here in fresh processes, two arms of
identical code, drawn into suites as tests/test_suite_scale.py draws them (a known slowdown multiplies one
row's head processes). Set UPDATE_GOLDEN=1 to write the fixtures afresh after a deliberate change, and read
the diff.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import re
import subprocess
import sys

import jsonschema
import numpy as np
import pytest

from e2e import ROOT
from test_suite_scale import suite
from torchbench import stats
from torchbench.ab.options import Policy
from torchbench.ab.verdict import decide
from torchbench.alert.comment import (FAILED_OUTCOME, NO_REGRESSION, REGRESSION, UNDECIDED, AlertReport, md,
                                      undecided_order)
from torchbench.errors import EXIT_FAILURE, EXIT_INCONCLUSIVE, EXIT_OK, EXIT_REGRESSION, UserError
from torchbench.project.commits import Commit

GOLDEN = ROOT / "tests" / "data" / "golden"
BASE = Commit("b2e29fb66f86e7491342597ae9bae202fc8dd45b", "Add a README")
HEAD = Commit("00d31233d28f0d7b3a1f5ae708efed94f0da1fcc", "TensorLike: normalise arguments with torch.utils._pytree")
# where the time went in a real alert: the A/A pair of evaluation/suite_validation.py's run of 2026-11-23
TIME = json.loads((ROOT / "evaluation" / "results" / "suite_validation-2026-11-23-b.json").read_text()
                  )["runs"][0]["ours"]["time_spent"]
RATE = TIME["rounds_per_minute"]

# outcome -> (rows, slowdown of row 0, processes a side, seed, a failed row)
SUITES = {
    REGRESSION: (12, 1.5, 12, 2, False),
    NO_REGRESSION: (6, None, 200, 3, False),
    UNDECIDED: (30, 1.2, 10, 3, False),
    FAILED_OUTCOME: (6, 1.5, 12, 2, True),
}


def report(real_values, outcome: str, policy: Policy = Policy()) -> AlertReport:
    rows, slowdown, processes, seed, failed = SUITES[outcome]
    evidence = suite(real_values, rows, slowdown, np.random.default_rng(seed), processes=processes)
    if failed:
        evidence.errors["head"][("bench.case_005", 0)] = "RuntimeError: boom"
    evidence.rounds = processes
    evidence.counts_off = "no counts: --no-counts"  # the pool was measured without counts
    return AlertReport(BASE, HEAD, decide(evidence, policy), policy, processes, time_spent=TIME)


@pytest.mark.parametrize("outcome", list(SUITES))
def test_each_outcome_renders_its_golden_comment(real_values, outcome):
    text = report(real_values, outcome).markdown()
    golden = GOLDEN / f"alert_{outcome}.md"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text)
    assert _alike(text, golden.read_text()), f"the comment differs from {golden} (UPDATE_GOLDEN=1 rewrites it)"


def _alike(text: str, golden: str) -> bool:
    """The comment as the golden one, word for word; its decimal figures within 2% of the golden's. A row's MDE
    held to its slow processes read 56.6% on the machine of 2026-12-01 and 55.8% on the one the golden was
    written on, the same pool and seeds: an exact comparison tested the machine, not the comment."""
    parts, want = re.split(r"(\d+\.\d+)", text), re.split(r"(\d+\.\d+)", golden)
    if len(parts) != len(want) or parts[::2] != want[::2]:
        return text == golden  # (the words differ: the assertion shows where)
    return all(math.isclose(float(a), float(b), rel_tol=0.02) for a, b in zip(parts[1::2], want[1::2]))


@pytest.mark.parametrize("outcome, exit_status, mark", [(REGRESSION, EXIT_REGRESSION, "❌"),
                                                        (NO_REGRESSION, EXIT_OK, "✅"),
                                                        (UNDECIDED, EXIT_OK, "⚠️"),
                                                        (FAILED_OUTCOME, EXIT_FAILURE, "⚠️")])
def test_each_outcome_has_its_headline_exit_status_and_json_field(real_values, outcome, exit_status, mark):
    r = report(real_values, outcome)
    assert r.outcome() == outcome and r.exit_status() == exit_status
    assert r.headline().startswith(mark) or (outcome == FAILED_OUTCOME and "⚠️" in r.headline())
    doc = json.loads(r.json())
    assert doc["outcome"] == outcome and doc["exit_status"] == exit_status
    jsonschema.validate(doc, json.loads((ROOT / "torchbench" / "schemas" / "alert.schema.json").read_text()))
    assert AlertReport.from_dict(doc).outcome() == outcome


def test_a_report_with_nothing_decided_never_says_no_regression(real_values):
    r = report(real_values, UNDECIDED)
    counts = r.counts()
    assert counts[stats.INCONCLUSIVE] == len(r.rows) == 30 and not counts[stats.REGRESSED]
    text = r.markdown()
    assert "✅" not in text and "no regression:" not in text
    assert r.headline().startswith("⚠️ no regression found; 30 of 30 rows undecided (median MDE ")


def test_suspects_come_first_and_the_rest_by_p_value_fold_past_ten(real_values):
    r = report(real_values, UNDECIDED)
    suspects, rest = undecided_order(r.rows)
    assert suspects[0].benchmark == "bench.case_000"  # the slowed row
    assert all(v.comparison.ci_low > 1 or v.comparison.ci_high < 1 for v in suspects)
    assert [v.comparison.p_value for v in rest] == sorted(v.comparison.p_value for v in rest)
    text = r.markdown()
    at = {name: text.index(name) for name in ("**Suspects", "The other", "<details><summary>")}
    assert at["**Suspects"] < at["The other"] < at["<details><summary>"]
    assert text.index(md(suspects[0].title)) < text.index("The other")
    folded = text[at["<details><summary>"]:].split("</details>")[0]
    assert f"{len(rest) - 10} more undecided" in folded and folded.count("\n- ") == len(rest) - 10


def test_what_it_would_take_uses_the_stated_mde(real_values):
    r = report(real_values, UNDECIDED)
    take = r.what_it_would_take()
    undecided = [v.comparison for v in r.rows if v.status == stats.INCONCLUSIVE]
    raised = 0
    for c in undecided:
        n = stats.processes_to_detect(c, 0.05)
        # where the slow processes' ceiling raised the stated MDE, the relabellings' MDE is what shrinks with
        # more processes, and at least those at which the ceiling stops binding (Comparison.ceiling_free)
        held = np.isfinite(c.relabelled_mde)
        raised += held
        mde = c.relabelled_mde if held else c.mde

        def mde_at(k: int) -> float:  # the MDE's standard error, shrunk as 1/sqrt(processes)
            return float(np.expm1(np.log1p(mde) * np.sqrt(c.n_base / k)))

        floor = max(c.ceiling_free, c.n_base + 1) if held else c.n_base
        assert mde_at(n) <= 0.05 + 1e-12 and (n == max(c.n_base, floor) or mde_at(n - 1) > 0.05)
    assert raised > 0  # this suite's 10 processes a side: the ceiling binds on some rows
    assert take["all_rounds"] >= take["half_rounds"] > 0
    assert take["half_minutes"] == pytest.approx(take["half_rounds"] / RATE)
    assert f"needs about {take['half_rounds']} more rounds" in r.markdown()


def test_the_undecided_exit_status_is_the_projects_choice(real_values, tmp_path):
    gated = report(real_values, UNDECIDED, Policy(undecided_exit=EXIT_INCONCLUSIVE))
    assert gated.exit_status() == EXIT_INCONCLUSIVE
    assert json.loads(gated.json())["exit_status"] == EXIT_INCONCLUSIVE
    # not for a decided verdict
    assert report(real_values, NO_REGRESSION, Policy(undecided_exit=EXIT_INCONCLUSIVE)).exit_status() == EXIT_OK
    # the flag, end to end: a recorded report's result files are not needed; the CLI refuses a bad value
    bad = subprocess.run([sys.executable, "-m", "torchbench", "alert", "--base", "a", "--head", "b",
                          "--undecided-exit", "7"], capture_output=True, text=True, cwd=tmp_path)
    assert bad.returncode == 2 and "--undecided-exit: must be 0 (pass) or 3 (inconclusive)" in bad.stderr
    with pytest.raises(UserError, match="1 is a regression's alone"):
        Policy(undecided_exit=1)


def _result_folders(root, arm: str, commit: str, pool: dict) -> list:
    """One asv results folder per round of `arm` (each file one process to the alert), written through
    asv's Results API: the dispatch cases' real per-process values of tests/data/alert_pool_12_rounds.json."""
    from asv import util
    from asv.benchmarks import Benchmarks
    from asv.results import Results
    from asv.runner import BenchmarkResult

    name = "bench_dispatch.Dispatch.track_time"
    jobs = sorted(pool["jobs"], key=lambda k: int(k.split("|")[1]))
    params = [["'__torch_function__ dispatch'"], ["'Tensor'", "'LoggingTensor'", "'TensorLike'"],
              ["'torch.add(a, b)'", "'torch.mul(a, b)'"], ["1"]]
    benchmarks = {name: {"name": name, "type": "track", "unit": "seconds", "version": "1", "code": "",
                         "param_names": ["label", "sub_label", "description", "num_threads"], "params": params}}
    folders = []
    for i, r in enumerate(pool["rounds"]):
        folder = root / f"{arm}-{i:02d}"
        (folder / "vm").mkdir(parents=True)
        util.write_json(str(folder / "vm" / "machine.json"), {"machine": "vm", "arch": "x86_64", "cpu": "",
                                                              "num_cpu": "2", "os": "Linux", "ram": ""}, api_version=1)
        util.write_json(str(folder / "benchmarks.json"), benchmarks, api_version=Benchmarks.api_version)
        values = [r["arms"][arm]["values"][job] for job in jobs]
        res = Results({"machine": "vm", "python": "3.11"}, {}, commit, 1_700_000_000_000 + i, "3.11", "existing-py",
                      {})
        res.add_result(benchmarks[name], BenchmarkResult(result=values, samples=[[v] for v in values],
                                                         number=[1000] * len(values), errcode=0, stderr="",
                                                         profile=None),
                       started_at=datetime.datetime.now(datetime.timezone.utc), duration=1.0, record_samples=True)
        res.save(str(folder))
        folders.append(folder)
    return folders


def test_the_undecided_exit_flag_end_to_end_on_real_result_files(tmp_path):
    """Two arms of identical code, 12 processes a side: undecided; exit 0, or the flag's status."""
    pool = json.loads((ROOT / "tests" / "data" / "alert_pool_12_rounds.json").read_text())
    base = _result_folders(tmp_path, "c5", BASE.sha, pool)
    head = _result_folders(tmp_path, "c6", HEAD.sha, pool)
    runs = {}
    for flag in ([], ["--undecided-exit", "3"]):
        report = tmp_path / f"report{len(flag)}.json"
        runs[len(flag)] = subprocess.run(
            [sys.executable, "-m", "torchbench", "alert", "--base-results", *map(str, base), "--head-results",
             *map(str, head), "--json", str(report), *flag], capture_output=True, text=True, cwd=tmp_path,
            timeout=600)
        doc = json.loads(report.read_text())
        assert doc["outcome"] == UNDECIDED, (doc["verdict"], runs[len(flag)].stderr[-2000:])
    assert runs[0].returncode == EXIT_OK and runs[2].returncode == EXIT_INCONCLUSIVE
    assert "⚠️ no regression found" in runs[0].stdout and "✅" not in runs[0].stdout
    assert "== undecided: exit status 3" in runs[2].stderr


def test_no_compared_rows_says_nothing_compared_not_all_decided():
    """Issue 51: every row new: not "✅ no regression: all 0 compared rows decided"."""
    from torchbench.ab.verdict import Verdict

    rows = [Verdict("b.x", "b.x", [], "new"), Verdict("b.y", "b.y", [], "new"), Verdict("b.z", "b.z", [], "removed")]
    r = AlertReport(Commit("a" * 40, "base"), Commit("b" * 40, "head"), rows, Policy(), 6, [], [])
    assert r.headline().startswith("➖ nothing compared") and "2 new, 1 removed" in r.headline()
    assert "all 0 compared" not in r.markdown()


def test_what_it_would_take_for_one_row_among_several_undecided(real_values):
    """Issue 62's noise: "needs about 6162 more rounds ... for all 1" where 3 rows were undecided."""
    import dataclasses

    r = report(real_values, UNDECIDED)
    undecided = [v for v in r.rows if v.status == stats.INCONCLUSIVE]
    kept = {id(undecided[0])}  # the others lose their comparison: their noise was not measured
    rows = [v if v.status != stats.INCONCLUSIVE or id(v) in kept else dataclasses.replace(v, comparison=None)
            for v in r.rows]
    one = dataclasses.replace(r, rows=rows)
    take = one.what_it_would_take()
    assert take["rows"] == 1 and take["undecided"] == len(undecided) > 1
    text = one.markdown()
    assert f"needs about {take['all_rounds']} more rounds" in text and "for the one row whose noise was measured" in text
    assert "for all 1" not in text and "for half of them" not in text
