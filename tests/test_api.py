"""The Python API (torchbench.api, re-exported as torchbench.*): a history measured, read and published,
and a base/head pair measured and decided, without the command line. Real asv, the embedded example."""

from __future__ import annotations

import statistics

import pytest

import torchbench
from torchbench_core import Measurement

pytestmark = pytest.mark.slow

SLOWDOWN = ("b2e29fb6", "00d31233")  # the example's commit that makes TensorLike ~3x slower, and its parent


def test_a_history_is_run_read_and_published_from_python(tmp_path, env_dir):
    report = torchbench.run_history(None, torchbench.Selection(range="HEAD~5..HEAD~3"), out=tmp_path,
                                    env_dir=env_dir,
                                    options=torchbench.HistoryOptions(patterns=("Dispatch",), rounds=1))
    assert isinstance(report, torchbench.RunReport) and report.exit_status() == 0, report.render()
    history = torchbench.read_history(tmp_path)
    assert isinstance(history, torchbench.ResultSet) and not history.warnings
    assert {r.commit[:8] for r in history.rows} == set(SLOWDOWN)
    tensorlike = [r for r in history.rows if "TensorLike" in str(r.params)]
    assert tensorlike and all(isinstance(r.measurement(), Measurement) for r in tensorlike)
    (tmp_path / "html").rename(tmp_path / "html-first")
    notes = torchbench.publish_site(tmp_path)
    assert isinstance(notes, list) and (tmp_path / "html" / "torchbench" / "index.html").exists()


def test_a_pair_is_measured_and_decided_from_python(tmp_path, env_dir):
    options = torchbench.AlertOptions(
        # (a budget that holds the 3-4 rounds with the builds it includes: 0.5 minutes held one round on a machine
        # whose builds took most of it, and a row of one process a side has no comparison)
        rounds=torchbench.Rounds(budget_minutes=3, min_rounds=3, max_rounds=4, counts=False),
        patterns=("Dispatch",), profile=False)
    report = torchbench.compare_commits(None, *SLOWDOWN, out=tmp_path, env_dir=env_dir, options=options)
    assert isinstance(report, torchbench.AlertReport) and not report.problems
    by_case = {r.params[1]: [] for r in report.rows}  # params: label, sub_label, description, threads
    for r in report.rows:
        by_case[r.params[1]].append(r.comparison.ratio)
    # A ~3x change on one case: its rows read slower than the untouched case's, as a whole. No bar on a single
    # row's ratio: 3-4 rounds on a loaded CI runner read one TensorLike row at 1.36 (the others 3.0).
    assert len(report.rows) == 6 and by_case["'TensorLike'"] and by_case["'Tensor'"], by_case
    assert statistics.geometric_mean(by_case["'TensorLike'"]) > statistics.geometric_mean(by_case["'Tensor'"])
    assert report.exit_status() in (0, 1) and report.markdown().startswith("<!--")


def test_bad_api_input_raises_user_error(tmp_path):
    with pytest.raises(torchbench.UserError, match="not a git repository"):
        torchbench.run_history(tmp_path, out=tmp_path / "out")
    with pytest.raises(torchbench.UserError, match="fdr must be between 0 and 1"):
        torchbench.Policy(fdr=2)
