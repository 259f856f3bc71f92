"""A second publish redoes only what changed (sitecache): real asv result files, written through asv's
Results API into a real git history, published by render_site as `asv publish` runs it."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from asv.config import Config

from tests.e2e import ROOT
from torchbench.history import changepoints
from torchbench.publish import page_cache, publisher

sys.path.insert(0, str(ROOT / "evaluation"))
import publish_speed as synthetic  # noqa: E402  (the publish bench's own history and result writer)


@pytest.fixture
def history(tmp_path):
    shas = synthetic.make_repo(tmp_path / "repo", 5)
    benches = synthetic.benchmarks(12)  # three labels of four cases
    (tmp_path / "benchmarks").mkdir()
    rng = np.random.default_rng(0)
    synthetic.write_results(tmp_path / "out" / "results", shas[:4], benches, rng)
    conf_path = synthetic.config(tmp_path / "out", tmp_path / "repo", [], "site")
    conf = Config.load(str(conf_path))
    return {"tmp": tmp_path, "shas": shas, "benches": benches, "rng": rng, "conf": conf,
            "html": tmp_path / "out" / "html-site" / publisher.SITE}


def publish(h, commits: int) -> dict[str, bytes]:
    publisher.render_site(h["conf"], {sha: i for i, sha in enumerate(h["shas"][:commits])})
    return {p.relative_to(h["html"]).as_posix(): p.read_bytes() for p in h["html"].rglob("*.html")}


def asv_publish_with_plugin(h, cwd) -> subprocess.CompletedProcess:
    """`asv publish` as a user runs it, with synthetic.config's configuration and our publisher in plugins."""
    conf = json.loads((h["tmp"] / "out" / "asv-site.conf.json").read_text())
    conf["plugins"] = [".torchbench.publish.publisher"]
    path = h["tmp"] / "out" / "asv-plugin.conf.json"
    path.write_text(json.dumps(conf))
    return subprocess.run([sys.executable, "-m", "asv", "publish", "--config", str(path)], capture_output=True,
                          text=True, cwd=cwd, timeout=600)


def summary(capsys) -> str:
    return capsys.readouterr().err.split("torchbench: ")[-1].strip()


def test_a_second_publish_of_the_same_results_reads_and_renders_nothing_and_writes_the_same_site(history, capsys):
    first = publish(history, 4)
    assert summary(capsys) == "result files: 4 read, 0 from the cache; labels: 3 rendered, 0 unchanged"
    second = publish(history, 4)
    assert summary(capsys) == "result files: 0 read, 4 from the cache; labels: 0 rendered, 3 unchanged"
    assert second == first


def test_labels_rendered_on_every_core_are_the_pages_rendered_one_after_another(history, capsys, monkeypatch):
    """The labels' pages and the change-point search run in forked workers (publish/forked.py); the site
    is byte for byte the one rendered in this process alone, and the summary counts every label."""
    import shutil

    from torchbench.publish import forked

    if not forked.FORK:
        pytest.skip("forking is used on Linux only")
    parallel = publish(history, 4)
    assert summary(capsys).endswith("labels: 3 rendered, 0 unchanged")
    shutil.rmtree(history["tmp"] / "out" / page_cache.FOLDER)
    monkeypatch.setattr(forked, "FORK", False)
    assert publish(history, 4) == parallel
    assert summary(capsys).endswith("labels: 3 rendered, 0 unchanged")


def test_a_new_commit_of_one_label_re_renders_that_label_alone(history, capsys):
    first = publish(history, 4)
    capsys.readouterr()
    one = dict([next(iter(history["benches"].items()))])
    synthetic.write_commit(history["tmp"] / "out" / "results", history["shas"][4], 4, one, history["rng"])
    second = publish(history, 5)
    assert summary(capsys) == "result files: 1 read, 4 from the cache; labels: 1 rendered, 2 unchanged"
    changed = {name for name in second if second[name] != first.get(name)}
    (label,) = {name.split("/")[-1] for name in changed if name.startswith(("compare/", "series/"))}
    assert {f"compare/{label}", f"series/{label}"} <= changed
    assert history["shas"][4][:8].encode() in second[f"compare/{label}"]
    # and the result is what a publish without any cache writes
    cache_dir = history["tmp"] / "out" / page_cache.FOLDER
    for path in sorted(cache_dir.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    fresh = publish(history, 5)
    assert fresh == second


def test_a_rewritten_result_file_is_read_again_and_a_broken_cache_entry_is_remade(history, capsys):
    publish(history, 4)
    capsys.readouterr()
    results = history["tmp"] / "out" / "results" / "bench"
    rewritten = history["shas"][1][:8]
    entries = (history["tmp"] / "out" / page_cache.FOLDER / "records" / "bench").glob("*.pickle")
    next(e for e in entries if not e.name.startswith(rewritten)).write_bytes(b"not a pickle")
    assert any(f.name.startswith(rewritten) for f in results.glob("*.json"))
    synthetic.write_commit(history["tmp"] / "out" / "results", history["shas"][1], 1, history["benches"],
                           history["rng"])  # new values for the second commit, in its file
    publish(history, 4)
    assert summary(capsys).startswith("result files: 2 read, 2 from the cache; labels: 3 rendered")


def test_a_long_series_searches_again_only_the_windows_a_new_commit_falls_in():
    rng = np.random.default_rng(1)
    values = 1e-6 * np.exp(rng.normal(0, 0.02, 1001))
    values[400:] *= 1.3
    first = changepoints.Windows()
    steps = changepoints.detect(values[:1000], windows=first)
    assert [s.at for s in steps] == [400]
    again = changepoints.Windows(first.used)
    assert changepoints.detect(values[:1000], windows=again) == steps
    assert set(again.used) == set(first.used)
    appended = changepoints.Windows(first.used)
    assert [s.at for s in changepoints.detect(values, windows=appended)] == [400]
    new = set(appended.used) - set(first.used)
    assert 1 <= len(new) <= 2 < len(appended.used)  # the last window or two; the rest as they were


def test_asv_publish_hands_our_pages_the_files_it_parsed_and_they_are_the_same_pages(history, tmp_path):
    """`asv publish` with our publisher in plugins: asv parses every result file and our pages take their
    records from that parse (publisher.setup), reading no file again; the pages equal render_site's."""
    import shutil

    expected = publish(history, 4)
    shutil.rmtree(history["tmp"] / "out" / page_cache.FOLDER)
    proc = asv_publish_with_plugin(history, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = next(s for s in proc.stderr.splitlines() if s.startswith("torchbench: result files"))
    assert line == ("torchbench: result files: 0 read, 4 as asv's publish read them, 0 from the cache; "
                    "labels: 3 rendered, 0 unchanged"), proc.stderr
    got = {p.relative_to(history["html"]).as_posix(): p.read_bytes() for p in history["html"].rglob("*.html")}
    assert got == expected


def test_a_malformed_result_file_under_asv_publish_is_named_once_and_the_rest_published(history, tmp_path):
    """asv's reading skips a file that is not JSON (with its own warning); our pages say so once on the
    landing page, not once per reader, and keep every other file's cells."""
    broken = history["tmp"] / "out" / "results" / "bench" / "0123456789ab-existing-py.json"
    broken.write_text('{"version": 2, "commit_hash": ')  # cut off mid-write
    proc = asv_publish_with_plugin(history, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ours = [s for s in proc.stderr.splitlines() if s.startswith("torchbench: warning") and broken.name in s]
    assert len(ours) == 1, proc.stderr
    index = (history["html"] / "index.html").read_text()
    named = [line for line in index.splitlines() if broken.name in line]
    assert len(named) == 1 and named[0].count("skipped, not a readable asv results file") == 1, named
    assert "labels: 3 rendered" in proc.stderr


def test_a_publish_that_failed_between_asvs_passes_leaves_nothing_to_the_next(history, tmp_path, monkeypatch):
    """Our pages are written when asv's first pass ends, and asv's second pass is told apart by that. A
    publish that stops in between (its first pass read, then an error) must not leave its mark to the next
    publish in the same process, which would take its own first pass for a second and write no pages."""
    from asv.commands.publish import Publish
    from asv.repo import get_repo

    expected = publish(history, 4)
    for name in ("iter_results", "run"):  # undone after the test: setup wraps them in place
        monkeypatch.setattr(Publish, name, Publish.__dict__[name])
    publisher.setup()
    conf = history["conf"]
    for _ in Publish.iter_results(conf, get_repo(conf)):  # a first pass, then asv "fails"
        pass
    assert Path(conf.results_dir).resolve() in publisher._rendered
    Publish.run(conf, pull=False)  # asv empties html_dir first
    assert not publisher._rendered
    got = {p.relative_to(history["html"]).as_posix(): p.read_bytes() for p in history["html"].rglob("*.html")}
    assert got == expected


@pytest.mark.parametrize("ahead", [-1, 10_000], ids=["asv's process reads every file", "the helper reads every file"])
def test_inside_asv_publish_either_core_may_read_a_file_and_the_pages_are_the_same(history, monkeypatch, capfd, ahead):
    """Inside asv's publish a file's cells are taken by the helper, or by asv's process when the helper is
    behind (publisher.AHEAD): the pages, the warnings and the counts must not depend on which."""
    from asv.commands.publish import Publish

    broken = history["tmp"] / "out" / "results" / "bench" / "0123456789ab-existing-py.json"
    expected = publish(history, 4)
    shutil.rmtree(history["tmp"] / "out" / page_cache.FOLDER)
    broken.write_text('{"version": 2, "commit_hash": ')  # named on the landing page whichever reads it
    for name in ("iter_results", "run"):
        monkeypatch.setattr(Publish, name, Publish.__dict__[name])
    monkeypatch.setattr(publisher, "AHEAD", ahead)
    publisher.setup()
    capfd.readouterr()
    Publish.run(history["conf"], pull=False)
    err = capfd.readouterr().err
    # the broken file: asv skipped it, so ours read it (and named it)
    assert "result files: 1 read, 4 as asv's publish read them, 0 from the cache; labels: 3 rendered" in err
    got = {p.relative_to(history["html"]).as_posix(): p.read_bytes() for p in history["html"].rglob("*.html")}
    assert got.keys() == expected.keys()
    assert {k: v for k, v in got.items() if k != "index.html"} == {k: v for k, v in expected.items()
                                                                 if k != "index.html"}
    named = [line for line in (history["html"] / "index.html").read_text().splitlines() if broken.name in line]
    assert len(named) == 1 and named[0].count("skipped, not a readable asv results file") == 1, named


def test_commit_subjects_are_read_in_one_log_as_gitpython_gives_them_and_an_unknown_sha_is_left_out(tmp_path):
    import git

    repo = git.Repo.init(tmp_path / "r")
    messages = ["one line", "a subject\nwrapped onto a second line\n\nand a body", "\n\nleading blank lines",
                "ünïcode <b>&</b>\n"]
    shas = set()
    for i, message in enumerate(messages):
        (tmp_path / "r" / "f").write_text(str(i))
        repo.index.add(["f"])
        shas.add(repo.index.commit(message).hexsha)
    expected = {sha: repo.commit(sha).summary for sha in shas}
    assert publisher._subjects(str(tmp_path / "r"), shas) == expected
    assert publisher._subjects(str(tmp_path / "r"), shas | {"f" * 40}) == expected
    assert publisher._subjects(str(tmp_path / "nowhere"), shas) == {}
