"""`torchbench run --torch`: torch releases as asv environments, with two real releases.

2.13.0 is this machine's CPU wheel; 2.14.1 is a CUDA build (about 5.5 GB in its environment) that imports
and runs on the CPU. Both install from the machine's own wheel store, so the test needs no download. The
many-release run is evaluation/torch_releases.py's.
"""

import re
import subprocess
import sys

import pytest
from bs4 import BeautifulSoup

import browser
from e2e import cli, explain, make_repo
from torchbench.asv_bridge import results

pytestmark = pytest.mark.slow
RELEASES = ("2.13.0", "2.14.1")
PYPROJECT = """\
[build-system]
requires = ["flit_core>=3.4,<4"]
build-backend = "flit_core.buildapi"

[project]
name = "relib"
version = "0.1"
description = "a throwaway library for the torch-release tests"
"""
SUITE = '''\
import torch

from torchbench_core.asv_suite import TimerSpec, TimerSuite


class Add(TimerSuite):
    min_run_time = 0.05
    timers = [TimerSpec("torch.add(a, b)", setup="a, b = torch.ones(4), torch.ones(4)", label="releases",
                        sub_label="Tensor", description="torch.add")]


def track_torch():
    """The release asv installed in the environment this runs in."""
    major, minor, patch = (int(p) for p in torch.__version__.split("+")[0].split(".")[:3])
    return major * 10000 + minor * 100 + patch
'''


@pytest.fixture(scope="module")
def releases(tmp_path_factory, env_dir):
    path = tmp_path_factory.mktemp("releases") / "relib"
    make_repo(path, [("first", {"pyproject.toml": PYPROJECT, "relib/__init__.py": '"""relib"""\n',
                                "benchmarks/__init__.py": "", "benchmarks/bench_add.py": SUITE})])
    out = path.parent / "out"
    args = ["run", "--repo", path, "--last", "1", "--rounds", "1", "--out", out, "--env-dir", env_dir]
    for release in RELEASES:
        args += ["--torch", release]
    proc = cli(*args)
    return proc, out, path


def test_each_release_is_an_environment_measured_and_its_disk_reported(releases):
    proc, out, _ = releases
    assert proc.returncode == 0, explain(proc)
    found = results.load(out / "results")
    envs = {row.env_name for row in found.rows}
    assert len(envs) == 2 and all(any(f"torch{r}" in e for e in envs) for r in RELEASES), envs
    # each environment really ran its own release (asv's matrix installed it, and nothing replaced it)
    torch_in = {row.env_name: row.value for row in found.rows if row.benchmark == "bench_add.track_torch"}
    for env, value in torch_in.items():
        release = re.search(r"torch([0-9.]+)", env).group(1)
        major, minor, patch = map(int, release.split("."))
        assert value == major * 10000 + minor * 100 + patch, (env, value)
    assert all(r.status == "ok" for r in found.rows)
    section = proc.stdout.split("== environments")[1].split("==")[0]
    sizes = {torch: float(gib) for torch, gib in re.findall(r"torch (\S+)\s+([0-9.]+) GiB", section)}
    assert set(sizes) == set(RELEASES) and all(size > 0.1 for size in sizes.values()), section


def test_pages_group_rows_and_lines_by_release(releases, tmp_path):
    _, out, _ = releases
    (page,) = (out / "html" / "torchbench" / "compare").glob("releases-*.html")
    loaded = browser.load(page.as_uri(), tmp_path / "chromium")
    assert not loaded.errors, loaded.console
    tags = [span.get_text() for span in BeautifulSoup(loaded.dom, "html.parser").select("tr.row span.env")]
    assert sorted(t.split(" ", 1)[1].strip("()") for t in tags) == [f"torch {r}" for r in RELEASES], tags
    (series,) = (out / "html" / "torchbench" / "series").glob("releases-*.html")
    soup = BeautifulSoup(browser.load(series.as_uri(), tmp_path / "chromium").dom, "html.parser")
    first = soup.select("figure.chart")[0]  # the time chart (its relative chart below has the same legend)
    legend = sorted(li.get_text().strip() for li in first.select("ul.legend li"))
    assert len(legend) == 2 and all(f"torch {r}]" in text for r, text in zip(RELEASES, legend)), legend


def test_a_second_run_measures_nothing_again_and_a_range_is_refused(releases, env_dir):
    _, out, path = releases
    again = cli("run", "--repo", path, "--last", "1", "--out", out, "--env-dir", env_dir, "--no-publish",
                *[a for r in RELEASES for a in ("--torch", r)], timeout=900)
    assert again.returncode == 0, explain(again)
    assert "everything was measured" in again.stdout
    files = list((out / "results").rglob("*.json"))
    bad = cli("run", "--repo", path, "--out", out, "--torch", ">=2.12")
    assert bad.returncode == 2 and "give an exact release" in bad.stderr, explain(bad)
    assert list((out / "results").rglob("*.json")) == files  # nothing touched


def test_pip_index_options_reach_the_environments_pip(tmp_path):
    """--index-url/--extra-index-url go to every pip that asv and we run, as pip's own environment variables."""
    from torchbench.asv_bridge.driver import Asv, PipIndex, Timings

    asv = Asv(tmp_path / "asv.conf.json", Timings(), pip=PipIndex("https://example.org/cpu",
                                                                  ("file:///opt/a", "file:///opt/b")))
    assert asv.env["PIP_INDEX_URL"] == "https://example.org/cpu"
    assert asv.env["PIP_EXTRA_INDEX_URL"] == "file:///opt/a file:///opt/b"
    probe = subprocess.run([sys.executable, "-m", "pip", "config", "debug"], env=asv.env, capture_output=True,
                           text=True)
    assert "PIP_INDEX_URL='https://example.org/cpu'" in probe.stdout, probe.stdout


def test_the_upgrade_verdict_measures_one_commit_in_two_releases(releases, env_dir):
    """`torchbench alert --base-torch A --head-torch B`: the same commit in two environments, alternating
    processes, the same statistics; the comment and the evidence site name each side's release."""
    import json

    _, out, path = releases
    report_file = out / "upgrade.json"
    proc = cli("alert", "--repo", path, "--head", "HEAD", "--base-torch", RELEASES[0], "--head-torch", RELEASES[1],
               "--out", out, "--env-dir", env_dir, "--no-counts", "--no-profile", "--min-rounds", "3",
               "--max-rounds", "4", "--budget-minutes", "1", "--json", report_file, timeout=900)
    assert proc.returncode in (0, 1), explain(proc)  # a verdict: 1 if the newer release is slower here
    report = json.loads(report_file.read_text())
    assert report["torch"] == {"base": RELEASES[0], "head": RELEASES[1]}
    assert report["base"]["sha"] == report["head"]["sha"]
    add = next(r for r in report["rows"] if r["benchmark"] == "bench_add.Add.track_time")
    assert add["comparison"]["n_base"] >= 3 and add["comparison"]["n_head"] >= 3
    assert f"on torch {RELEASES[0]} → head" in proc.stdout and f"on torch {RELEASES[1]};" in proc.stdout
    (site,) = (out / "alert").glob(f"*-torch{RELEASES[0]}..*-torch{RELEASES[1]}/site")
    (page,) = (site / "compare").glob("releases-*.html")
    tags = {span.get_text() for span in BeautifulSoup(page.read_text(), "html.parser").select("tr.row span.env")}
    assert {t.strip("()").split(" ", 1)[1] for t in tags} == {f"torch {r}" for r in RELEASES}, tags
