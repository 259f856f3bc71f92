"""`torchbench find` end to end: a real history with a known culprit and a commit that does not build.

The throwaway library (built with flit) does the same work for four commits,
loses its module (that commit does not build), gets it back, then does four
times the work (the culprit), then two commits of docs. The history is
measured sparsely (the first two commits and the last two), so the step
spans six commits and `find` has to confirm it and bisect it; its first
probe lands on the commit that does not build, which is skipped and named.
"""

import json

import pytest

import browser
from bs4 import BeautifulSoup
from e2e import ROOT, cli, explain, make_repo
from torchbench.errors import EXIT_INCONCLUSIVE
from torchbench.history import step_record

pytestmark = pytest.mark.slow

PYPROJECT = """\
[build-system]
requires = ["flit_core>=3.4,<4"]
build-backend = "flit_core.buildapi"

[project]
name = "steplib"
version = "0.1"
description = "a throwaway library with a known slowdown"
dependencies = ["torch"]
"""
FAST = "def work(n):\n    return sum(range(n))\n"
# A step far above this machine's process noise (a process lands in a fast group or a slow tail up to 2x
# apart): a probe at either level is then "same" against its own end on five processes, whose interval must
# stay short of the step's geometric midpoint: about 4x here; at a 4x step it was under 2x, which one
# slow tail could reach.
SLOW = "def work(n):\n    return sum(sum(range(n)) for _ in range(16))\n"
SUITE = '''\
import steplib
from torchbench_core.asv_suite import TimerSpec, TimerSuite


class Work(TimerSuite):
    timers = [TimerSpec("steplib.work(300)", globals={"steplib": steplib}, label="steplib", sub_label="work(300)",
                        description="sum of a range")]
    min_run_time = 0.2
'''
# five processes a side: a perfectly separated step then has p = 2/C(10, 5) = 0.008, below the FDR level
# (exactly five: the budget counts from the comparison's start, builds included, and must not cut it short)
MEASURE = ["--min-rounds", "5", "--max-rounds", "5", "--budget-minutes", "1", "--no-counts"]


@pytest.fixture(scope="module")
def history(tmp_path_factory, env_dir):
    path = tmp_path_factory.mktemp("find") / "steplib"
    base = {"pyproject.toml": PYPROJECT, "benchmarks/__init__.py": "", "benchmarks/bench_work.py": SUITE}
    shas = make_repo(path, [
        ("fast", {**base, "steplib/__init__.py": FAST}),        # 0
        ("docs 1", {"README": "1"}),                            # 1
        ("docs 2", {"README": "2"}),                            # 2
        ("docs 3", {"README": "3"}),                            # 3
        ("lose the module", {"steplib/__init__.py": None}),     # 4: does not build
        ("module back", {"steplib/__init__.py": FAST}),        # 5
        ("sixteen times the work", {"steplib/__init__.py": SLOW}),  # 6: the culprit
        ("docs 7", {"README": "7"}),                            # 7
        ("docs 8", {"README": "8"}),                            # 8
    ])
    out = path.parent / "out"
    hashfile = path.parent / "measured"
    hashfile.write_text("".join(f"{shas[i]}\n" for i in (0, 1, 7, 8)))
    run = cli("run", "--repo", path, "--hashfile", hashfile, "--out", out, "--env-dir", env_dir, "--no-publish")
    assert run.returncode == 0, explain(run)
    return path, out, shas


def test_find_confirms_the_step_and_bisects_it_to_the_culprit_skipping_what_does_not_build(history, env_dir):
    path, out, shas = history
    proc = cli("find", "Work", "--repo", path, "--out", out, "--env-dir", env_dir, *MEASURE)
    assert proc.returncode == 0, explain(proc)
    record = json.loads((out / step_record.RECORD).read_text())
    assert record["schema"] == step_record.SCHEMA
    (step,) = record["steps"]
    assert (step["before"], step["after"]) == (shas[1], shas[7]) and step["ratio"] > 2
    assert step["status"] == "confirmed" and step["confirmation"]["ratio"] > 2, step["confirmation"]
    assert step["confirmation"]["fdr"] == 0.01 and step["confirmation"]["family"] == 1  # one candidate: its own family
    culprit = step["culprit"]
    assert culprit["status"] == "found" and culprit["culprit"] == shas[6], culprit
    assert culprit["subject"] == "sixteen times the work" and culprit["parent"] == shas[5]
    assert [s["sha"] for s in culprit["skipped"]] == [shas[4]] and culprit["skipped"][0]["why"]  # named, with why
    assert f"{shas[4][:8]} does not build: skipped" in proc.stdout
    # each probe was compared with both ends
    assert [p["sha"] for p in culprit["probes"]] == [shas[5], shas[6]]
    # a probe moved from the end it differs from, and never from the end it equals (which a busy machine may
    # leave 'unclear' rather than 'same': the culprit is then bounded by the 'moved' verdicts alone)
    verdicts = [(p["against_good"], p["against_bad"]) for p in culprit["probes"]]
    assert [verdicts[0][1], verdicts[1][0]] == [["moved"], ["moved"]], verdicts
    assert verdicts[0][0] in (["same"], ["unclear"]) and verdicts[1][1] in (["same"], ["unclear"]), verdicts
    # the flame graphs of the culprit and its parent, recorded by torchbench profile's code
    (roles,) = culprit["profiles"].values()
    assert set(roles) == {"culprit", "parent"}
    assert f"== {shas[6][:8]} (sixteen times the work): " in proc.stdout, explain(proc)  # with its subject
    for rel in roles.values():
        assert (out / rel).is_file() and (out / rel).read_text().lstrip().startswith("<")
    assert f"culprit {shas[6][:8]} sixteen times the work" in proc.stdout
    # the culprit's error is bounded: 6 commits need at most 3 probes, each of its intervals at 1 - 5%/3
    assert culprit["error_bound"] == 0.05 and culprit["probe_confidence"] == pytest.approx(1 - 0.05 / 3)

    # a second find measures nothing: the record is kept and reused
    again = cli("find", "Work", "--repo", path, "--out", out, "--env-dir", env_dir, *MEASURE, timeout=300)
    assert again.returncode == 0 and "comparing" not in again.stdout, explain(again)


def test_published_site_lists_the_step_with_its_culprit_and_a_valid_feed_and_json(history, env_dir, tmp_path):
    feedparser = pytest.importorskip("feedparser")
    jsonschema = pytest.importorskip("jsonschema")
    path, out, shas = history
    if not (out / step_record.RECORD).exists():
        pytest.skip("needs the find test's record")
    proc = cli("publish", "--out", out)
    assert proc.returncode == 0, explain(proc)
    site = out / "html" / "torchbench"
    page = (site / "regressions.html").read_text()
    assert 'class="step confirmed up"' in page and shas[6][:8] in page and "sixteen times the work" in page
    doc = json.loads((site / "regressions.json").read_text())
    schema = json.loads((ROOT / "torchbench" / "schemas" / "regressions.schema.json").read_text())
    jsonschema.validate(doc, schema)
    (confirmed,) = [s for s in doc["steps"] if s["status"] == "confirmed"]
    assert confirmed["culprit"]["culprit"] == shas[6]
    for rel in confirmed["culprit"]["profiles"][f"{confirmed['benchmark']}|{confirmed['index']}"].values():
        assert (site / rel).is_file()  # the links resolve inside the site
    parsed = feedparser.parse(str(out / "html" / "regressions.xml"))
    assert not parsed.bozo, parsed.bozo_exception
    assert parsed.feed.title == "steplib performance regressions"
    (entry,) = parsed.entries
    assert entry.title.startswith("+") and shas[6][:8] in entry.summary
    assert "regressions.html#" in entry.link
    assert 'id="nav-li-torchbench-steps"' in (out / "html" / "index.html").read_text()
    # in a browser, from disk: no console error, and the culprit's flame graph links resolve
    loaded = browser.load((site / "regressions.html").as_uri(), tmp_path / "chromium")
    assert not loaded.errors, loaded.console
    flames = BeautifulSoup(loaded.dom, "html.parser").select("a.flame")
    assert len(flames) == 2 and all((site / a["href"]).is_file() for a in flames)
    anchors = {tag["id"] for tag in BeautifulSoup(loaded.dom, "html.parser").select("[id]")}

    # the series chart marks the confirmed step on its row, linked to its entry on the Steps page
    (series,) = (site / "series").glob("*.html")
    loaded = browser.load(series.as_uri(), tmp_path / "chromium")
    assert not loaded.errors, loaded.console
    soup = BeautifulSoup(loaded.dom, "html.parser")
    (rule,) = soup.select("svg a.step.confirmed")
    # the step starts at the first measured commit at the new level (commits 2-6 were not measured by run)
    assert rule["href"].split("#")[1] in anchors and shas[7][:8] in rule.find("title").get_text()
    line = soup.select_one("svg g.line")
    assert line.select_one("path.mid") and line.select_one("path.band")  # the median and its band beside

    # the landing page: the label's confirmed regression, each case's sparkline and latest change
    loaded = browser.load((site / "index.html").as_uri(), tmp_path / "chromium")
    assert not loaded.errors, loaded.console
    soup = BeautifulSoup(loaded.dom, "html.parser")
    (regression,) = soup.select("li.regression")
    assert regression.a["href"].split("#")[1] in anchors and "sixteen times the work" in regression.get_text()
    cases = soup.select("tr.case")
    assert cases and all(tr.select_one("svg.spark polyline") for tr in cases)
    assert all(tr.select_one("td.change").get_text().strip().endswith("%") for tr in cases)


def test_bisect_from_the_command_line_says_inconclusive_when_there_is_no_step(history, env_dir):
    """c3..c5: the module is lost and comes back the same; the ends measure alike, so there is nothing to
    bisect, and find says so (exit 3, which a workflow cannot take for a regression) rather than guess."""
    path, out, shas = history
    proc = cli("find", "Work", "--good", shas[3], "--bad", shas[5], "--repo", path, "--out", out,
               "--env-dir", env_dir, "--no-profile", *MEASURE)
    assert proc.returncode == EXIT_INCONCLUSIVE == 3, explain(proc)
    assert f"inconclusive: between {shas[3][:8]} and {shas[5][:8]}" in proc.stdout
    assert "changed between" in proc.stdout and "(1 interleaved comparison(s))" in proc.stdout


def test_find_refuses_bad_arguments_with_exit_2(history, env_dir):
    path, out, shas = history
    proc = cli("find", "--good", shas[0], "--repo", path, "--out", out, "--env-dir", env_dir)
    assert proc.returncode == 2 and "give both --good and --bad" in proc.stderr
    proc = cli("find", "--good", shas[0], "--bad", shas[5], "--repo", path, "--out", out, "--env-dir", env_dir)
    assert proc.returncode == 2 and "needs a BENCHMARK" in proc.stderr
    proc = cli("find", "Work", "--good", shas[6], "--bad", shas[0], "--repo", path, "--out", out,
               "--env-dir", env_dir)
    assert proc.returncode == 2 and "does not descend from" in proc.stderr
