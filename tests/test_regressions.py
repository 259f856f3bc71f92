"""The steps page, its JSON and asv's feed (publish/steps_page.py), from Compare pages built on result rows (fast)."""

import json
from pathlib import Path

import numpy as np
import pytest
from bs4 import BeautifulSoup

from torchbench.history import step_record
from torchbench.publish import pages, publisher, steps_page
from torchbench.asv_bridge.results import Row

ROOT = Path(__file__).resolve().parents[1]


def row(commit, case, median):
    samples = tuple(np.linspace(median * 0.99, median * 1.01, 9))
    params = (("label", "dispatch"), ("sub_label", case), ("description", "torch.add(a, b)"), ("num_threads", 1))
    return Row("m1", commit, "virtualenv-py3.11", "bench.Dispatch.track_time", {"Tensor": 0, "TensorLike": 1}[case],
               params, median, samples, 1000, None, "seconds", 0)


@pytest.fixture
def built():
    """Six commits; TensorLike steps up 2x at the third and back at the fifth, Tensor stays flat."""
    shas = [f"{i:x}" * 40 for i in range(1, 7)]
    level = [1, 1, 2, 2, 1, 1]
    rows = [row(sha, "Tensor", 1e-6 * (1 + 0.003 * i)) for i, sha in enumerate(shas)]
    rows += [row(sha, "TensorLike", 5e-6 * level[i] * (1 + 0.01 * (i % 2))) for i, sha in enumerate(shas)]
    revisions = {sha: i for i, sha in enumerate(shas)}
    compare_pages, series_pages = pages.build(rows, revisions, {sha: f"commit {i}" for i, sha in enumerate(shas)})
    return shas, compare_pages, series_pages, revisions


def test_steps_are_detected_on_the_pages_data_and_start_unconfirmed(built, tmp_path):
    shas, compare_pages, series_pages, revisions = built
    warnings = []
    steps = steps_page.collect(series_pages, revisions, tmp_path, warnings)
    assert not warnings
    assert [(s["after"], s["ratio"] > 1, s["status"], s["name"]) for s in steps] == [
        (shas[2], True, "unconfirmed", "dispatch · TensorLike · torch.add(a, b)"),
        (shas[4], False, "unconfirmed", "dispatch · TensorLike · torch.add(a, b)")]
    assert steps[0]["subject_after"] == "commit 2" and steps[0]["series"] == compare_pages[0].slug


def test_find_s_record_is_joined_and_only_confirmed_regressions_reach_the_feed(built, tmp_path):
    feedparser = pytest.importorskip("feedparser")
    jsonschema = pytest.importorskip("jsonschema")
    shas, compare_pages, series_pages, revisions = built
    fresh = steps_page.collect(series_pages, revisions, tmp_path, [])
    up, down = fresh
    confirmation = {"status": "regressed", "label": "compute", "ratio": 1.98, "ci_low": 1.9, "ci_high": 2.05,
                    "p_value": 1e-4, "processes": [12, 12], "counts_delta": 0.9, "decided_by": "instruction counts",
                    "error": ""}
    culprit = {"status": "found", "culprit": shas[2], "subject": "commit 2", "parent": shas[1], "range": shas[1:3],
               "skipped": [], "probes": [], "why": "", "jobs": [["bench.Dispatch.track_time", 1]],
               "profiles": {"bench.Dispatch.track_time|1": {"culprit": "profiles/x/c.svg"},
                            "bench.Dispatch.track_time|0": {"culprit": "profiles/x/other-job.svg"}}}
    record = {step_record.record_key(up): {**up, "status": "confirmed", "confirmation": confirmation,
                                          "culprit": culprit, "confirmed_at": "2026-11-22T07:00:00+00:00"},
              step_record.record_key(down): {**down, "status": "refuted", "confirmation": {**confirmation,
                                                                                         "status": "unchanged",
                                                                                         "decided_by": "wall time"}}}
    for entry in record.values():
        for key in ("series", "subject_before", "subject_after"):
            entry.pop(key)
    step_record.write_record(tmp_path, record)
    steps = steps_page.collect(series_pages, revisions, tmp_path, [])
    assert [s["status"] for s in steps] == ["confirmed", "refuted"]
    site, html = tmp_path / "html" / "torchbench", tmp_path / "html"
    site.mkdir(parents=True)
    steps_page.write(steps, html_dir=html, site=site, env=publisher._environment(), project="tensorlib")

    doc = json.loads((site / "regressions.json").read_text())
    jsonschema.validate(doc, json.loads((ROOT / "torchbench" / "schemas" / "regressions.schema.json").read_text()))
    page = BeautifulSoup((site / "regressions.html").read_text(), "html.parser")
    rows = page.select("tr.step")
    assert [r["class"] for r in rows] == [["step", "confirmed", "up"], ["step", "refuted", "down"]]
    assert shas[2][:8] in rows[0].get_text() and "compute" in rows[0].get_text() and "+98.0%" in rows[0].get_text()
    # the channel that decided the re-measurement, where it was not the wall time (the alert's rows say so too)
    assert "decided by instruction counts" in rows[0].get_text() and "decided by" not in rows[1].get_text()
    from torchbench.history.find import StepsFound, render_steps

    listing = render_steps(StepsFound(step_record.read_record(tmp_path)), tmp_path).splitlines()
    assert [("decided by instruction counts" in line, "decided by" in line) for line in listing
            if "TensorLike" in line] == [(True, True), (False, False)], listing
    assert [a["href"] for a in rows[0].select("a.flame")] == ["profiles/x/c.svg"]  # its own case's only
    feed = feedparser.parse(str(html / steps_page.FEED))
    assert not feed.bozo and feed.feed.title == "tensorlib performance regressions"
    (entry,) = feed.entries  # the refuted improvement is not an entry
    assert entry.title.startswith("+") and shas[2][:8] in entry.summary and "compute" in entry.summary
    assert entry.link.endswith("#" + rows[0]["id"])


def test_the_feed_keeps_asv_s_feed_id_so_subscribers_keep_working(built, tmp_path):
    """asv.feed derives the feed's id from author, title and address: the same three as asv's publisher."""
    feedparser = pytest.importorskip("feedparser")
    from asv import feed as asv_feed

    shas, compare_pages, series_pages, revisions = built
    (tmp_path / "site").mkdir()
    steps_page.write([], html_dir=tmp_path, site=tmp_path / "site", env=publisher._environment(),
                      project="tensorlib")
    asv_feed.write_atom(str(tmp_path / "asv.xml"), [], author="Airspeed Velocity",
                        title="tensorlib performance regressions", address="tensorlib.asv")
    ours, theirs = (feedparser.parse(str(tmp_path / name)) for name in (steps_page.FEED, "asv.xml"))
    assert ours.feed.id == theirs.feed.id and not ours.entries


def test_a_broken_record_is_named_in_a_warning_and_the_fresh_steps_still_show(built, tmp_path):
    shas, compare_pages, series_pages, revisions = built
    (tmp_path / step_record.RECORD).write_text('{"schema": "torchbench.changepoints/1", "steps": [')
    warnings = []
    steps = steps_page.collect(series_pages, revisions, tmp_path, warnings)
    assert len(steps) == 2 and len(warnings) == 1 and step_record.RECORD in warnings[0]


def test_a_step_whose_confirmation_could_not_decide_is_listed_as_undecided_with_its_interval(built, tmp_path):
    """Not dropped: find's listing and the Steps page both show it, with the re-measured interval."""
    from torchbench.history.find import StepsFound, render_steps

    shas, compare_pages, series_pages, revisions = built
    up, down = steps_page.collect(series_pages, revisions, tmp_path, [])
    confirmation = {"status": "inconclusive", "label": "wall time only (memory, cache, or noise)", "ratio": 1.08,
                    "ci_low": 0.97, "ci_high": 1.21, "p_value": 0.2, "processes": [6, 6], "counts_delta": 0.0,
                    "error": ""}
    record = {step_record.record_key(up): {**up, "status": step_record.INCONCLUSIVE, "confirmation": confirmation,
                                          "culprit": None}}
    step_record.write_record(tmp_path, record)
    listing = render_steps(StepsFound(step_record.read_record(tmp_path)), tmp_path)
    (line,) = [s for s in listing.splitlines() if "TensorLike" in s]
    assert line.split()[0] == "undecided" and "re-measured 1.080x [0.970, 1.210]" in line

    steps = steps_page.collect(series_pages, revisions, tmp_path, [])
    site, html = tmp_path / "html" / "torchbench", tmp_path / "html"
    site.mkdir(parents=True)
    steps_page.write(steps, html_dir=html, site=site, env=publisher._environment(), project="tensorlib")
    page = BeautifulSoup((site / "regressions.html").read_text(), "html.parser")
    (row,) = [r for r in page.select("tr.step") if r["id"] == steps_page.anchor(up)]
    assert row.select("td")[0].get_text() == "undecided" and "+8.0% [-3.0%, +21.0%]" in row.get_text()
