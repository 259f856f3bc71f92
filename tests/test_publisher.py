"""The publisher on real asv results, checked in headless Chromium.

A throwaway library with two commits (the second's message is an XSS
payload) and a suite with __torch_function__ cases (one named with an XSS
payload) is measured by `torchbench run` in a virtualenv, by plain `asv run`
in an existing environment (a second env) and under a second machine name
(its own results folder, merged as a team fanning runs over CI runners has
it). A malformed results file sits among them. Plain `asv publish` must then
produce our pages, and every page must work opened from disk.
"""

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

import git
import pytest
from bs4 import BeautifulSoup

from torchbench import stats
from torchbench.asv_bridge import results
from torchbench.history.run import DEFAULT_ROUNDS
from torchbench.publish import pages
from torchbench_core import Compare, Measurement, TaskSpec

import browser

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
XSS_CASE = '<img src=x onerror="document.title=\'pwned\'">'
XSS_SUBJECT = '<script>document.title="pwned"</script> tune'
LABEL = "__torch_function__ overhead"

PYPROJECT = """\
[build-system]
requires = ["flit_core>=3.4,<4"]
build-backend = "flit_core.buildapi"

[project]
name = "publib"
version = "0.1"
description = "a throwaway library for the publisher tests"
"""
SUITE = f'''\
import torch

from torchbench_core.asv_suite import TimerSpec, TimerSuite


class SubTensor(torch.Tensor):
    pass


class SubWithTorchFunction(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return super().__torch_function__(func, types, args, kwargs or {{}})


MAKERS = {{"Tensor": torch.tensor, "SubTensor": SubTensor, "SubWithTorchFunction": SubWithTorchFunction,
          {XSS_CASE!r}: torch.tensor}}


class Overhead(TimerSuite):
    min_run_time = 0.05
    timers = [TimerSpec("torch.add(t1, t2)", setup="t1, t2 = make([1.0]), make([2.0])", globals={{"make": make}},
                        label={LABEL!r}, sub_label=name, description="torch.add(t1, t2)")
              for name, make in MAKERS.items()]
'''


def check(proc):
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return proc


@pytest.fixture(scope="module")
def site(env_dir, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("publisher")
    path = tmp / "publib"
    (path / "publib").mkdir(parents=True)
    (path / "benchmarks").mkdir()
    repo = git.Repo.init(path, initial_branch="main")
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "t").set_value("user", "email", "t@example.com")
    (path / "pyproject.toml").write_text(PYPROJECT)
    (path / "benchmarks" / "__init__.py").write_text("")
    (path / "benchmarks" / "bench_overhead.py").write_text(SUITE)
    shas = []
    for version, message in ((1, "first"), (2, XSS_SUBJECT)):
        (path / "publib" / "__init__.py").write_text(f'"""publib"""\nVERSION = {version}\n')
        repo.index.add(["pyproject.toml", "publib/__init__.py", "benchmarks/__init__.py",
                        "benchmarks/bench_overhead.py"])
        shas.append(repo.index.commit(message).hexsha)

    out = tmp / "out"
    tb = [sys.executable, "-m", "torchbench"]
    check(subprocess.run([*tb, "run", "--repo", path, "--last", "2", "--out", out, "--env-dir", env_dir,
                          "--no-publish"], capture_output=True, text=True, cwd=ROOT, timeout=1800))
    conf = out / "asv.conf.json"
    asv = [sys.executable, "-m", "asv"]
    existing = ["--environment", f"existing:{sys.executable}", "--record-samples"]
    home = tmp / "home"  # the second machine's ~/.asv-machine.json, away from the user's
    home.mkdir()
    other = dict(os.environ, HOME=str(home))
    check(subprocess.run([*asv, "machine", "--yes", "--machine", "other"], capture_output=True, text=True, env=other))
    for sha in shas:
        check(subprocess.run([*asv, "run", "--config", conf, *existing, "--set-commit-hash", sha],
                             capture_output=True, text=True))
        check(subprocess.run([*asv, "run", "--config", conf, *existing, "--set-commit-hash", sha, "--machine",
                              "other"], capture_output=True, text=True, env=other))
    # real flame graphs of the newest commit's cases, which the pages link from its cells and points
    check(subprocess.run([*tb, "profile", "--repo", path, "--last", "1", "--out", out, "--env-dir", env_dir,
                          "-b", "Overhead", "--seconds", "0.3"], capture_output=True, text=True, cwd=ROOT,
                         timeout=900))
    machine = next(p.name for p in (out / "results").iterdir() if p.is_dir() and p.name != "other")
    broken = out / "results" / machine / "0badc0de-broken.json"
    broken.write_text("{ this is not json")

    published = check(subprocess.run([*tb, "publish", "--out", out], capture_output=True, text=True, cwd=ROOT))
    assert (out / "html" / "torchbench" / "index.html").exists()
    # A plain `asv publish` (the plugin loaded from the config) gives the pages the tests look at.
    (out / "html" / "torchbench" / "index.html").unlink()
    plain = check(subprocess.run([*asv, "publish", "--config", conf], capture_output=True, text=True))
    return {"out": out, "html": out / "html", "shas": shas, "machine": machine, "broken": broken, "repo": path,
            "published": published, "plain": plain, "profile_dir": tmp / "chrome"}


def compare_page(site) -> Path:
    (page,) = (site["html"] / "torchbench" / "compare").glob("*.html")
    return page


def embedded(dom: str) -> dict:
    soup = BeautifulSoup(dom, "html.parser")
    return json.loads(soup.find("script", id="compare-data").string)


def measurements(site, env_ids) -> list[Measurement]:
    found = results.load(site["out"] / "results")
    out = []
    for row in found.rows:
        env = pages.env_id_of(row)
        if row.status == "ok" and env in env_ids:
            spec = row.task_spec()
            # a Compare cell shows the commit's level (the series' value), not the median of its blocks
            out.append(Measurement(row.number, [stats.level(row.samples) * row.number],
                                   TaskSpec(stmt=spec.stmt, setup="pass", label=spec.label, sub_label=spec.sub_label,
                                            description=spec.description, env=env, num_threads=spec.num_threads)))
    return out


def text_cells(compare: Compare) -> dict[tuple[str, str], list[str]]:
    """(env, row name) -> cell texts, parsed from the printed table."""
    cells, env, in_block = {}, None, False
    for line in str(compare).splitlines():
        in_block = in_block or "threads: " in line  # the column header comes before the first block
        parts = [p.strip() for p in line.split("  |  ")]
        if not in_block or len(parts) < 2 or not line.startswith("  "):
            continue
        head = parts[0]
        if head.startswith("("):
            env, _, name = head[1:].partition(")")
            head = name.strip()
        cells[(env, head)] = parts[1:]
    return cells


def dom_table(dom: str) -> dict[tuple[str, str], list[tuple[str, int]]]:
    """(env, row name) -> [(cell text, colour: +1 slower, -1 faster, 0 none)] of the page's table."""
    soup = BeautifulSoup(dom, "html.parser")
    out = {}
    for tr in soup.find("table", id="table").find_all("tr", class_="row"):
        th = tr.find("th")
        th.find("span", class_="env").extract()
        for mark in th.find_all("span", class_="common"):  # a commit whose cells moved together is marked
            mark.extract()
        out[(tr["data-env"], th.get_text().strip())] = [
            (td.get_text().strip(), 1 if "slower" in td["class"] else -1 if "faster" in td["class"] else 0)
            for td in tr.find_all("td")]
    return out


def dom_cells(dom: str) -> dict[tuple[str, str], list[str]]:
    return {key: [text for text, _ in cells] for key, cells in dom_table(dom).items()}


def test_plain_asv_publish_loads_our_publisher_and_names_the_malformed_file(site):
    for proc in (site["published"], site["plain"]):
        assert "Generating output for TorchbenchPages" in proc.stdout
        assert str(site["broken"]) in proc.stderr
    index = (site["html"] / "torchbench" / "index.html").read_text()
    assert "0badc0de-broken.json" in index and "skipped" in index
    assert 'id="nav-li-torchbench"' in (site["html"] / "index.html").read_text()


def test_every_page_works_from_disk_with_no_console_error_and_every_link_resolving(site):
    pages_dir = site["html"] / "torchbench"
    html_pages = sorted(pages_dir.rglob("*.html"))
    assert {p.parent.name for p in html_pages} >= {"torchbench", "compare", "series"}
    for page in html_pages:
        loaded = browser.load(page.as_uri(), site["profile_dir"])
        assert not loaded.errors, (page, loaded.console)
        soup = BeautifulSoup(loaded.dom, "html.parser")
        links = [a.get("href") for a in soup.find_all(["a", "link"])] + [s.get("src") for s in soup.find_all("script")]
        for link in filter(None, links):
            url = urlparse(link)
            if url.scheme in ("http", "https") or not url.path:
                continue
            target = (page.parent / unquote(url.path)).resolve()
            assert target.exists(), (page, link)


def test_default_compare_table_equals_torchbench_core_compare_over_the_same_measurements(site):
    page = compare_page(site)
    loaded = browser.load(page.as_uri(), site["profile_dir"])
    data = embedded(loaded.dom)
    # Two machines, two environments on the first: every env is a (machine, environment, commit).
    assert {e["machine"] for e in data["envs"]} == {site["machine"], "other"}
    assert len({(e["machine"], e["env"]) for e in data["envs"]}) == 3
    assert {e["commit"] for e in data["envs"]} == set(site["shas"])
    expected = text_cells(Compare(measurements(site, set(data["default"]))))
    assert dom_cells(loaded.dom) == expected
    assert len(expected) == len(data["default"]) * 4


def test_the_script_lays_the_default_view_as_the_server_did_tooltips_and_links_included(site):
    """The page arrives rendered; choosing the same commits again re-lays it from the embedded data."""
    page = compare_page(site)
    server = BeautifulSoup(page.read_text(), "html.parser")
    data = embedded(page.read_text())
    view = f"#view:envs={','.join(data['default'])};base=;rel=0"
    loaded = browser.load(page.as_uri() + view, site["profile_dir"])
    assert not loaded.errors, loaded.console
    relaid = BeautifulSoup(loaded.dom, "html.parser")

    def cells(soup):
        return [(td.get("title"), td.get_text().strip(), [a["href"] for a in td.find_all("a")], td.get("class"))
                for td in soup.find("table", id="table").find_all("td")]
    assert cells(relaid) == cells(server)
    assert any("99% CI" in title for title, _, _, _ in cells(server))
    assert any("across processes (p = " in title for title, _, _, _ in cells(server))  # the colour's reason
    # the newest commit's cases link their flame graph (on every machine and environment), the older's none
    rows = server.find("table", id="table").find_all("tr", class_="row")
    for tr in rows:
        newest = tr["data-env"].endswith(site["shas"][1][:12])
        assert [bool(td.find("a")) for td in tr.find_all("td")] == [newest], tr["data-env"]
    assert {tr["data-env"][-12:] for tr in rows} == {sha[:12] for sha in site["shas"]}


def test_a_view_by_url_relative_to_any_baseline_equals_compare_relative_to_and_colours_by_stats(site):
    page = compare_page(site)
    data = embedded(page.read_text())
    envs = [e["id"] for e in data["envs"]]
    base = next(e["id"] for e in data["envs"] if e["machine"] == "other" and e["commit"] == site["shas"][0])
    view = f"#view:envs={','.join(envs)};base={base};rel=1"
    loaded = browser.load(page.as_uri() + view, site["profile_dir"])
    assert not loaded.errors, loaded.console
    ms = measurements(site, set(envs))
    compare = Compare(ms)
    compare.relative_to(base)
    assert dom_cells(loaded.dom) == text_cells(compare)
    assert "ratios of levels" in BeautifulSoup(loaded.dom, "html.parser").find(id="footer").get_text()

    # The colours are stats.page_changes', every cell against the chosen baseline, compared together.
    found = results.load(site["out"] / "results")
    (built,), _ = pages.build(found.rows, {sha: i for i, sha in enumerate(site["shas"])}, {})
    changes = built.changes(envs, {e.group: base for e in built.envs})
    assert len(changes.cells) == 4 * (len(envs) - 1)  # every cell but the baseline's
    # every cell's processes' levels were kept; the one-process cells (plain asv run, and the baseline here)
    # have no between-process test
    assert all(c.reason != stats.NO_LEVELS for c in changes.cells.values())
    assert all(c.reason == stats.ONE_PROCESS and math.isnan(c.p) for c in changes.cells.values())
    want = {(k[0], k[2]): c.direction for k, c in changes.cells.items()}
    for (env, name), cells in dom_table(loaded.dom).items():
        assert [direction for _, direction in cells] == [0 if env == base else want[(env, name)]], (env, name)
    # and the script's arithmetic is scipy's: the incomplete beta function behind Welch's p-value
    from scipy.special import betainc
    points = ((0.6, 0.3), (1.5, 0.9), (3.2, 0.05), (20.0, 0.7), (2.5, 0.999), (0.75, 1e-6))
    got = browser.evaluate(page, site["profile_dir"], "[" + ",".join(
        f"window.torchbenchCompare.betainc({a}, 0.5, {x}).toPrecision(17)" for a, x in points) + "].join(' ')")
    for (a, x), value in zip(points, got.split()):
        assert float(value) == pytest.approx(betainc(a, 0.5, x), rel=1e-11), (a, x)


def test_payloads_in_names_and_commit_messages_are_shown_as_text_never_run(site):
    for page in sorted((site["html"] / "torchbench").rglob("*.html")):
        source = page.read_text()
        assert "<img src=x" not in source and "<script>document" not in source, page
        loaded = browser.load(page.as_uri(), site["profile_dir"])
        soup = BeautifulSoup(loaded.dom, "html.parser")
        assert "pwned" not in soup.title.get_text(), page
        assert not soup.find("img"), page
    compare = BeautifulSoup(browser.load(compare_page(site).as_uri(), site["profile_dir"]).dom, "html.parser")
    assert XSS_CASE in compare.get_text() and XSS_SUBJECT in compare.get_text()


def test_the_overhead_series_plots_every_case_against_plain_tensor(site):
    (page,) = (site["html"] / "torchbench" / "series").glob("*.html")
    soup = BeautifulSoup(browser.load(page.as_uri(), site["profile_dir"]).dom, "html.parser")
    captions = [f.get_text() for f in soup.find_all("figcaption")]
    assert "torch.add(t1, t2) (1 thread)" in captions
    assert "overhead over Tensor: torch.add(t1, t2) (1 thread)" in captions
    charts = {f.find("figcaption").get_text(): f.find("svg", attrs={"role": "img"})
              for f in soup.find_all("figure", class_="chart")}
    time_chart = charts["torch.add(t1, t2) (1 thread)"]
    overhead_chart = charts["overhead over Tensor: torch.add(t1, t2) (1 thread)"]
    relative = charts["torch.add(t1, t2) (1 thread), each case against its own median level"]
    cases = lambda svg: sorted(g["data-case"] for g in svg.find_all("g", class_="line"))  # noqa: E731
    # A line per case and (machine, environment): three of them, each over the two commits.
    assert cases(time_chart) == sorted(["Tensor", "SubTensor", "SubWithTorchFunction", XSS_CASE] * 3)
    assert cases(overhead_chart) == sorted(["SubTensor", "SubWithTorchFunction", XSS_CASE] * 3)
    assert cases(relative) == cases(time_chart)
    for g in overhead_chart.find_all("g", class_="line"):
        assert len(g.find_all("circle")) == 2
    # each dot says what its value pools: the blocks, and the processes the asv plugin counted (torchbench
    # run's default 4 rounds; plain `asv run` here measures in its own number of rounds)
    titles = [t.get_text() for t in time_chart.find_all("title")]
    assert any(f"from {DEFAULT_ROUNDS} processes" in t for t in titles)
    assert all(re.search(r"\d+ blocks from \d+ process", t) for t in titles), titles
    counted = {r.name: set(json.loads(r.read_text())["processes"].values())
               for r in (site["out"] / "outcomes" / site["machine"]).glob("*.json")}
    assert all(c == {DEFAULT_ROUNDS} for name, c in counted.items() if "-virtualenv-" in name)  # torchbench run
    assert all(c and min(c) >= 1 for c in counted.values()) and len(counted) == 4  # and plain asv run's
    browser.screenshot(page.as_uri(), site["out"] / "series.png", site["profile_dir"])


def test_two_machines_results_merged_are_published_side_by_side(site, tmp_path):
    """What the history workflow's last job does: each machine's job uploads its own results folder (here the
    fixture's two machines, split apart), `torchbench merge` puts them in one, `torchbench publish` shows both."""
    import shutil

    results_dir = site["out"] / "results"
    inputs = []
    for machine in (site["machine"], "other"):
        folder = tmp_path / f"job-{machine}" / "results"
        shutil.copytree(results_dir / machine, folder / machine)
        shutil.copyfile(results_dir / "benchmarks.json", folder / "benchmarks.json")
        inputs.append(folder.parent)  # an output folder, as the job uploads it
    merged_out = tmp_path / "merged"
    tb = [sys.executable, "-m", "torchbench"]
    proc = subprocess.run([*tb, "merge", *inputs, "--repo", site["repo"], "--out", merged_out],
                          capture_output=True, text=True, cwd=ROOT)
    # the malformed file among the first machine's results is named, skipped, and the status says so
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert str(site["broken"].name) in proc.stdout and "not an asv result file" in proc.stdout
    assert f"{site['machine']}: " in proc.stdout and "other: " in proc.stdout
    assert not (merged_out / "results" / site["machine"] / site["broken"].name).exists()
    again = subprocess.run([*tb, "merge", *inputs, "--repo", site["repo"], "--out", merged_out],
                           capture_output=True, text=True, cwd=ROOT)
    assert "0 result file(s) added, 0 replaced by newer content" in again.stdout, again.stdout  # nothing twice
    check(subprocess.run([*tb, "publish", "--out", merged_out], capture_output=True, text=True, cwd=ROOT))

    page = next((merged_out / "html" / "torchbench" / "compare").glob("*.html"))
    loaded = browser.load(page.as_uri(), site["profile_dir"])
    assert not loaded.errors, loaded.console
    data = embedded(loaded.dom)
    assert {e["machine"] for e in data["envs"]} == {site["machine"], "other"}
    assert {e["commit"] for e in data["envs"] if e["machine"] == "other"} == set(site["shas"])
    # each machine's rows are tagged with its name in the table, and each has its own line on the series chart
    tags = {span.get_text() for span in BeautifulSoup(loaded.dom, "html.parser").select("tr.row span.env")}
    assert any("other" in t for t in tags) and any(site["machine"] in t for t in tags)
    series = next((merged_out / "html" / "torchbench" / "series").glob("*.html"))
    soup = BeautifulSoup(browser.load(series.as_uri(), site["profile_dir"]).dom, "html.parser")
    legend = [li.get_text() for li in soup.select("ul.legend li")]
    assert any("other ·" in t for t in legend) and any(f"{site['machine']} ·" in t for t in legend), legend
    # the same cells as the unmerged site's (median, interval, n; the flame-graph links stay in the fixture's
    # output folder): merging moved files, it changed no value
    original = embedded(compare_page(site).read_text())["cells"]
    assert set(data["cells"]) == set(original)
    assert {env: {k: v[:4] for k, v in cells.items()} for env, cells in data["cells"].items()} == \
        {env: {k: v[:4] for k, v in cells.items()} for env, cells in original.items()}


def test_two_commits_of_identical_code_colour_no_cell_and_no_change(site):
    """evaluation/site_colours.py at small settings: the two commits differ in publib's VERSION, which no
    benchmark reads, so every coloured cell would be noise. Measured by `torchbench run` (4 processes a
    cell) and by plain asv runs (1), on two machines."""
    sys.path.insert(0, str(ROOT / "evaluation"))
    import site_colours

    found = site_colours.evaluate(site["out"], {sha: i for i, sha in enumerate(site["shas"])})
    default = found["views"]["default"]
    assert default["cells"] == 12  # three machine-environments x four rows
    # plain `asv run` measured a TimerSuite in one round: those 8 cells have no between-process evidence
    assert default["one process"] == 8 and set(found["processes"]) == {1, DEFAULT_ROUNDS}
    # No cell measured by one process is ever coloured (a rule, not a rate). The 4 cells with between-process
    # evidence are each a Welch test at Benjamini-Hochberg's 5% beyond the 5% floor: on identical code the
    # rule's rate is measured by evaluation/site_colours.py (0 of 276 cells), and one draw of 4 cells can
    # colour one by chance (a fresh-clone run did so once, stop 42), so this single draw allows one; a rule that
    # colours noise (the replaced one coloured 9 of 24 such cells) colours more.
    assert not [c for c in found["coloured"]["new"] if f"({stats.ONE_PROCESS})" in c], found["coloured"]
    assert default["new"] <= 1, found["coloured"]
    assert found["landing"]["changes"] == 12 and found["landing"]["new"] <= 1, found["coloured"]
