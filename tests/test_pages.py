"""The pages' content as data (pages.py, charts.py), on result rows shaped as asv's results module gives them."""

import dataclasses
import math

import numpy as np
import pytest

from torchbench import stats
from torchbench.publish import charts, pages, publisher
from torchbench.asv_bridge.results import Row

LABEL = "__torch_function__ overhead"


def row(commit: str, case: str, median: float, *, machine="m1", env="virtualenv-py3.11", date=0, n=9,
        processes=None, levels=None):
    samples = tuple(np.linspace(median * 0.98, median * 1.02, n))
    params = (("label", LABEL), ("sub_label", case), ("description", "torch.add(t1, t2)"), ("num_threads", 1))
    return Row(machine=machine, commit=commit, env_name=env, benchmark="bench.Overhead.track_time",
               index={"Tensor": 0, "SubTensor": 1}[case], params=params, value=median, samples=samples,
               number=1000, stats=None, unit="seconds", date=date, processes=processes, levels=levels)


def history(commits=7, processes=None):
    shas = [f"{i:012x}".ljust(40, "a") for i in range(1, commits + 1)]
    rows = [row(sha, case, (1e-6 if case == "Tensor" else 3e-6) * (1 + 0.01 * i), processes=processes)
            for i, sha in enumerate(shas) for case in ("Tensor", "SubTensor")]
    return shas, rows


def test_a_page_opens_on_the_last_five_commits_in_history_order_and_keeps_only_their_samples():
    shas, rows = history()
    revisions = {sha: i for i, sha in enumerate(shas)}
    (page,), (series,) = pages.build(rows, revisions, {})
    assert [e.commit for e in page.envs] == shas
    assert [page.env(e).commit for e in page.default_envs] == shas[-5:]
    kept = {page.env(key[0]).commit for key, cell in page.cells.items() if cell.samples is not None}
    assert kept == set(shas[-5:])
    view = page.table(page.default_envs)
    assert [page.env(r.env).commit for r in view.rows][::2] == shas[-5:]  # rows grouped by env, oldest first
    # A cell shows its level (what the series plot), old commits chosen later too.
    old = page.table([page.envs[0].id])
    assert old.rows[0].cells[0].measurement.median == pytest.approx(stats.level(rows[0].samples))
    assert old.rows[0].cells[0].measurement.median < 1e-6


def test_env_ids_are_stable_and_machines_and_environments_are_told_apart():
    shas, rows = history(2)
    rows += [row(shas[0], "Tensor", 2e-6, machine="m2"), row(shas[0], "Tensor", 2e-6, env="existing-py")]
    (page,), _ = pages.build(rows, {sha: i for i, sha in enumerate(shas)}, {shas[0]: "first"})
    ids = {e.id for e in page.envs}
    assert len(ids) == 4 and all(i.endswith(shas[0][:12]) or i.endswith(shas[1][:12]) for i in ids)
    (again,), _ = pages.build(rows, {sha: i for i, sha in enumerate(shas)}, {})
    assert ids == {e.id for e in again.envs}
    tags = {page.tag(e) for e in page.envs}
    assert any("m2" in t for t in tags) and any("existing-py" in t for t in tags)
    assert page.env(next(i for i in ids if i.startswith("m1"))).subject in ("first", "")


def test_commits_off_the_branch_come_after_it_by_date():
    shas, rows = history(3)
    extra = [row("f" * 40, "Tensor", 1e-6, date=5), row("e" * 40, "Tensor", 1e-6, date=9)]
    (page,), _ = pages.build(rows + extra, {sha: i for i, sha in enumerate(shas)}, {})
    assert [e.commit for e in page.envs][-2:] == ["f" * 40, "e" * 40]


def test_the_overhead_is_each_case_minus_tensor_on_the_same_commit_with_a_band_spanning_both_intervals():
    shas, rows = history(2)
    _, (series,) = pages.build(rows, {sha: i for i, sha in enumerate(shas)}, {})
    assert series.overhead_baseline == "Tensor"
    sub = next(s for s in series.series if s.name == "SubTensor")
    tensor = next(s for s in series.series if s.name == "Tensor")
    for (env, ns, low, high), p, t in zip(sub.overhead, sub.points, tensor.points):
        assert ns == pytest.approx((p.interval.median - t.interval.median) * 1e9)
        assert low == pytest.approx((p.interval.low - t.interval.high) * 1e9)
        assert high == pytest.approx((p.interval.high - t.interval.low) * 1e9)
        assert low < ns < high


def test_a_chart_scales_lines_into_the_plot_and_drops_bands_it_cannot_draw():
    marks = [charts.Mark(i, v, v - 1, v + 1, None, f"p{i}") for i, v in enumerate([10.0, 20.0, 30.0])]
    partial = [charts.Mark(0, 15.0, math.nan, math.nan, "a.svg", "<b>")]
    c = charts.chart("t", "us", [charts.Line("a", marks), charts.Line("b", partial)], {0: "c0", 1: "c1", 2: "c2"})
    x0, y0, x1, y1 = c.plot
    a, b = c.lines
    xs = [x for x, _, _ in a.points]
    ys = [y for _, y, _ in a.points]
    assert xs[0] == x0 and xs[-1] == x1 and ys == sorted(ys, reverse=True)  # higher values drawn higher
    assert all(y0 <= y <= y1 for y in ys)
    assert a.band.startswith("M") and a.band.endswith("Z") and not b.band
    assert '<a href="a.svg">' in b.points_svg and "&lt;b&gt;" in b.points_svg  # the tooltip is escaped
    assert [label for _, label in c.x_ticks] == ["c0", "c1", "c2"]


def test_a_cells_colour_needs_a_baseline_in_its_own_environment_and_processes_behind_both():
    shas = [f"{i:012x}".ljust(40, "a") for i in range(1, 4)]
    rng = np.random.default_rng(2)

    def measured(sha, case, level, machine="m1", processes=4):
        levels = tuple(level * np.exp(rng.normal(0, 0.01, processes)))
        return row(sha, case, level, machine=machine, levels=levels, processes=processes)
    rows = [measured(shas[0], "Tensor", 1e-6), measured(shas[0], "SubTensor", 3e-6),
            measured(shas[1], "Tensor", 1e-6), measured(shas[1], "SubTensor", 4.5e-6),  # SubTensor +50%
            measured(shas[2], "Tensor", 1e-6, processes=1), measured(shas[2], "SubTensor", 4.5e-6, processes=1),
            measured(shas[1], "Tensor", 5e-6, machine="m2")]
    (page,), _ = pages.build(rows, {sha: i for i, sha in enumerate(shas)}, {})
    chosen = [e.id for e in page.envs]
    baselines = page.baselines(chosen)
    changes = page.changes(chosen, baselines)
    m2 = next(e.id for e in page.envs if e.machine == "m2")
    assert baselines[page.env(m2).group] == m2  # m2's only env is its own baseline: nothing to colour
    assert all(key[0] != m2 for key in changes.cells)
    by_commit = {(page.env(k[0]).commit, k[2]): (c.direction, c.reason) for k, c in changes.cells.items()}
    assert by_commit == {(shas[1], "Tensor"): (0, ""), (shas[1], "SubTensor"): (1, stats.EVIDENCE),
                         (shas[2], "Tensor"): (0, stats.ONE_PROCESS), (shas[2], "SubTensor"): (0, stats.ONE_PROCESS)}
    # a confirmed step between the baseline and a cell colours it whatever its processes; a candidate marks it
    steps = [{"machine": "m1", "env_name": "virtualenv-py3.11", "benchmark": "bench.Overhead.track_time", "index": 1,
              "before": shas[0], "after": shas[1], "status": status, "ratio": 1.5}
             for status in ("confirmed",)]
    stepped = page.changes(chosen, baselines, steps)
    assert {(page.env(k[0]).commit, k[2]): (c.direction, c.reason) for k, c in stepped.cells.items()
            if k[2] == "SubTensor"} == {(shas[1], "SubTensor"): (1, stats.STEP), (shas[2], "SubTensor"): (1, stats.STEP)}
    steps[0]["status"] = "unconfirmed"
    marked = page.changes(chosen, baselines, steps)
    assert {c.reason for k, c in marked.cells.items() if k[2] == "SubTensor"} == {stats.CANDIDATE}
    # the page's script gets each cell's level and per-process spread, and the steps by row
    data = page.data(steps)
    cell = data["cells"][chosen[0]]["1|SubTensor|torch.add(t1, t2)"]
    assert len(cell) == 8 and cell[5] == 4 and cell[4] == pytest.approx(page.cells[(chosen[0], 1, "SubTensor",
                                                                                    "torch.add(t1, t2)")].interval.level)
    assert list(data["steps"].values()) == [{"1|SubTensor|torch.add(t1, t2)": [[1, 0, 1.5]]}]


def counts_row(commit: str, case: str, instructions: float, *, label=LABEL):
    """A CountsSuite row: the same task-spec parameters as the timed case, in instructions per call."""
    params = (("label", label), ("sub_label", case), ("description", "torch.add(t1, t2)"), ("num_threads", 1))
    return Row(machine="m1", commit=commit, env_name="virtualenv-py3.11", benchmark="bench.OverheadCounts.track_instructions",
               index={"Tensor": 0, "SubTensor": 1}[case], params=params, value=instructions,
               samples=(instructions - 2, instructions, instructions + 2), number=100, stats=None,
               unit="instructions", date=0)


def test_counts_of_a_timed_case_sit_beside_its_time_and_a_counts_label_has_its_own_page():
    shas, rows = history(2)
    rows += [counts_row(sha, "Tensor", 4000.0 + i) for i, sha in enumerate(shas)]  # SubTensor is not counted
    rows += [counts_row(sha, "Tensor", 9000.0, label="instruction counts") for sha in shas]
    timed, counted = sorted(pages.build(rows, {sha: i for i, sha in enumerate(shas)}, {})[0],
                            key=lambda p: p.unit_kind != "time")
    assert (timed.label, timed.unit_kind, counted.label, counted.unit_kind) == (
        LABEL, "time", "instruction counts", pages.COUNT_UNIT)
    assert len(timed.cells) == 4  # the times alone: counts are not rows of their own
    beside = {(timed.env(k[0]).commit, k[2]): c.counts and c.counts.median for k, c in timed.cells.items()}
    assert beside == {(shas[0], "Tensor"): 4000.0, (shas[1], "Tensor"): 4001.0,
                      (shas[0], "SubTensor"): None, (shas[1], "SubTensor"): None}
    data = timed.data()
    assert sorted(v for env in data["instructions"].values() for v in env.values()) == [4000.0, 4001.0]
    # the counts' tooltip: one text, which the page's cells and the script's redrawn ones both read
    assert data["counts_title"] == pages.COUNTS_TITLE and "the code itself" in pages.COUNTS_TITLE
    assert all(c.interval.median == 9000.0 for c in counted.cells.values())


def test_values_in_a_unit_of_their_own_are_shown_as_they_are_on_a_page_of_their_own():
    """A track_ method with its own unit (operators' "compiled/eager") beside timed rows of the same label: its
    values are not seconds, so they get their own page, unscaled, the unit named in the table, tooltips and
    script; the timed rows keep theirs."""
    shas, rows = history(2)
    ratio = lambda sha, v: Row(  # noqa: E731
        machine="m1", commit=sha, env_name="virtualenv-py3.11", benchmark="bench.Ratio.track_ratio", index=0,
        params=(("label", LABEL), ("sub_label", "Tensor"), ("description", "p50"), ("num_threads", 1)), value=v,
        samples=None, number=None, stats=None, unit="compiled/eager", date=0)
    rows += [ratio(sha, v) for sha, v in zip(shas, (0.93, 0.95))]
    timed, own = sorted(pages.build(rows, {sha: i for i, sha in enumerate(shas)}, {})[0],
                        key=lambda p: p.unit_kind != "time")
    assert (timed.label, timed.unit_kind) == (LABEL, "time") and len(timed.cells) == 4
    assert (own.label, own.unit_kind) == (f"{LABEL} (compiled/eager)", "compiled/eager")
    assert own.slug != timed.slug
    view = own.table([e.id for e in own.envs])
    assert view.footer == "Values are in compiled/eager (level)."
    assert sorted(c.interval.median for c in own.cells.values()) == [0.93, 0.95]
    data = own.data()
    assert (data["unit"], data["scale"], data["fixed"]) == ("compiled/eager", 1.0,
                                                           ["compiled/eager", "Values are in compiled/eager (level)."])
    assert timed.data()["fixed"] is None and timed.data()["unit"] != "compiled/eager"
    assert publisher._ci_text(next(iter(own.cells.values())).interval, own.unit_kind).startswith("level; median 0.9")


def test_a_path_is_written_as_python_writes_its_coordinates_tenths_signs_and_all():
    """charts._path writes the digits with numpy; the text must be what f"{x},{y}" gives for every point."""
    rng = np.random.default_rng(5)

    def python(xs, ys):
        return "M" + " L".join(f"{x},{y}" for x, y in zip(xs.tolist(), ys.tolist()))

    for trial in range(500):
        n = int(rng.integers(1, 40))
        xs = np.round(rng.uniform(-99999, 99999, n) * rng.choice([1, 1e-3, 1e-5]), 1)
        ys = np.round(rng.uniform(-1000, 1000, n), 1)
        ys[0] = [-0.0, 0.0, 99999.9, -0.1, 10.0][trial % 5]
        assert charts._path(xs, ys) == python(xs, ys)
    for odd in ([math.nan, 1.0], [1e6, 2.0], [math.inf, 0.5]):  # not finite, too wide: written by Python
        xs = np.array(odd)
        assert charts._path(xs, xs[::-1]) == python(xs, xs[::-1])


def test_a_chart_draws_a_second_statistic_and_step_rules_inside_its_range():
    marks = [charts.Mark(i, v, v - 1, v + 1, None, f"p{i}", mid=v + 5) for i, v in enumerate([10.0, 20.0, 30.0])]
    steps = [charts.StepMark(1, "confirmed", "../regressions.html#s", "confirmed step"),
             charts.StepMark(9, "unconfirmed", "../regressions.html#t", "outside the history")]
    c = charts.chart("t", "us", [charts.Line("a", marks)], {0: "c0", 1: "c1", 2: "c2"}, steps=steps)
    (line,) = c.lines
    x0, y0, x1, y1 = c.plot
    assert line.mid_path.startswith("M") and line.mid_path.count("L") == 2
    (step,) = c.steps  # the one at position 9 lies outside the plotted commits
    assert step.px == (x0 + x1) / 2 and step.href == "../regressions.html#s"
    # the mids widen the scale: the highest mid (35) is inside the plot
    assert all(y0 <= float(p.split(",")[1]) <= y1 for p in line.mid_path[1:].split(" L"))


def test_a_sparkline_skips_unknown_values_and_escapes_its_colour():
    scale = charts.spark_scale([[1.0, 3.0, 2.0]], 0.05)
    svg = charts.sparkline([1.0, math.nan, 3.0, 2.0], scale, color='"><script>')
    points = svg.split('points="')[1].split('"')[0].split()
    assert len(points) == 3  # the unknown value is left out, and the others keep their places
    assert "<script>" not in svg and "&quot;&gt;&lt;script&gt;" in svg
    assert charts.sparkline([math.nan], scale) == ""


def test_sparklines_of_a_label_share_one_scale_so_a_wobble_is_small_beside_a_step():
    wobble = [1.0, 1.1, 1.0, 1.05, 1.0, 1.1]
    step = [1.0, 1.0, 1.0, 3.0, 3.0, 3.0]
    scale = charts.spark_scale([wobble, step], 0.05)

    def height(svg):
        ys = [float(p.split(",")[1]) for p in svg.split('points="')[1].split('"')[0].split()]
        return max(ys) - min(ys)
    tall, small = height(charts.sparkline(step, scale, steps=[3])), height(charts.sparkline(wobble, scale))
    assert small < tall / 8  # log(1.1) against log(3): a tenth as tall
    assert charts.sparkline(step, scale, steps=[3]).count("spark-step") == 1  # the confirmed step's rule
    assert charts.scale_text(scale) == "-42% to +73% of each case's median"
    flat = charts.spark_scale([[2.0, 2.0]], 0.05)  # never narrower than the floor: a flat case draws flat
    assert charts.scale_text(flat) == "-5% to +5% of each case's median"


def test_series_plot_levels_with_the_median_beside_and_steps_marked_on_their_rows():
    from torchbench.publish import publisher

    shas, rows = history(7)
    compare_pages, series_pages = pages.build(rows, {sha: i for i, sha in enumerate(shas)}, {shas[4]: "slow it"})
    (series,) = series_pages
    sub = next(s for s in series.series if s.name == "SubTensor")
    p = sub.points[4]
    step = {"machine": p.env.machine, "env_name": p.env.env_name, "benchmark": p.benchmark, "index": p.index,
            "after": shas[4], "before": shas[3], "status": "confirmed", "ratio": 1.3, "name": "SubTensor",
            "key": "k", "subject_after": "slow it", "series": series.slug}
    elsewhere = {**step, "index": 99}  # another row's step: not on this row's chart
    context = publisher._series_context(series, {}, {}, [step, elsewhere])
    chart = context["panels"][0]["time"]
    line = next(line for line in chart.lines if line.case == "SubTensor")
    levels = [m.y for m in line.marks]
    assert levels == pytest.approx([pt.interval.level * 1e6 for pt in sub.points])  # microseconds
    assert [m.mid for m in line.marks] == pytest.approx([pt.interval.median * 1e6 for pt in sub.points])
    assert all(lvl < mid for lvl, mid in zip(levels, (m.mid for m in line.marks)))
    (rule,) = chart.steps
    assert rule.x == p.env.position and rule.status == "confirmed" and rule.href.startswith("../regressions.html#")
    assert "+30.0%" in rule.title and "slow it" in rule.title
    assert "level" in line.marks[0].text and "median" in line.marks[0].text and "blocks" in line.marks[0].text
    # beside it, each case against its own median level (a small case's step as plain as a large one's)
    relative = context["panels"][0]["relative"]
    r_line = next(r for r in relative.lines if r.case == "SubTensor")
    assert [m.y for m in r_line.marks] == pytest.approx(np.array(levels) / np.median(levels))
    assert [s.x for s in relative.steps] == [p.env.position] and r_line.color == line.color

    labels = publisher._landing_context(compare_pages, series_pages, [step, {**step, "status": "unconfirmed"},
                                                                      {**step, "ratio": 0.7}])
    (label,) = labels
    assert label["regressions"] == [step]  # confirmed regressions only: not candidates, not improvements
    case = next(c for c in label["cases"] if c["name"] == "SubTensor")
    assert case["change"] == "+1.0%" and case["commit"].commit == shas[-1] and case["previous"].commit == shas[-2]
    assert case["spark"].count("<polyline") == 1
    assert case["spark"].count("spark-step") == 1  # the confirmed step, marked where it lies
    assert next(c for c in label["cases"] if c["name"] == "Tensor")["spark"].count("spark-step") == 0


def test_cells_are_found_by_key_and_a_cell_given_twice_keeps_the_last():
    shas, rows = history(3)
    again = row(shas[1], "SubTensor", 5e-6)  # the same cell from a second file: the last one counts
    (page,), _ = pages.build(rows + [again], {sha: i for i, sha in enumerate(shas)}, {})
    assert len(page.cells) == 6 and len(list(page.cells)) == 6
    env = next(e for e in page.envs if e.commit == shas[1])
    cell = page.cells[(env.id, 1, "SubTensor", "torch.add(t1, t2)")]
    assert cell.interval.median == pytest.approx(5e-6) and cell.samples is not None  # a default-table commit
    assert page.cells.get((env.id, 1, "NoSuchCase", "torch.add(t1, t2)")) is None
    assert page.cells.get(("no.such.env", 1, "SubTensor", "torch.add(t1, t2)")) is None
    assert {k for k, _ in page.cells.items([env.id])} == {(env.id, 1, c, "torch.add(t1, t2)")
                                                           for c in ("Tensor", "SubTensor")}


def test_a_point_says_how_many_blocks_and_processes_its_value_pools():
    from torchbench.publish import publisher

    for processes, said in ((4, "9 blocks from 4 processes"), (1, "9 blocks from 1 process)"),
                            (None, "9 blocks (processes not counted)")):
        shas, rows = history(3, processes=processes)
        _, (series,) = pages.build(rows, {sha: i for i, sha in enumerate(shas)}, {shas[2]: "tune"})
        chart = publisher._series_context(series, {}, {})["panels"][0]["time"]
        assert said in chart.lines[0].marks[-1].text and "tune" in chart.lines[0].marks[-1].text
        assert chart.hover is None  # short lines: a dot per commit, each with its tooltip


def test_a_long_series_carries_what_the_script_shows_under_the_pointer():
    from torchbench.publish import publisher

    shas, rows = history(charts.DOTS_UP_TO + 20, processes=4)
    _, (series,) = pages.build(rows, {sha: i for i, sha in enumerate(shas)}, {})
    context = publisher._series_context(series, {}, {})
    chart = context["panels"][0]["time"]
    assert not chart.lines[0].points_svg  # too many commits for a dot each
    hover = chart.hover
    assert [line["name"] for line in hover["lines"]] == [line.name for line in chart.lines]
    sub = next(s for s in series.series if s.name == "SubTensor")
    line = next(line for line in hover["lines"] if line["name"] == "SubTensor")
    assert line["pos"] == [p.env.position for p in sub.points] and set(line["p"]) == {4}
    assert line["level"] == pytest.approx([p.interval.level * 1e6 for p in sub.points])  # in the chart's unit
    assert hover["unit"] == chart.y_label and hover["range"] == [0, len(shas) - 1]
    assert context["commits"][0] == [shas[0][:8], ""]


@pytest.mark.slow
def test_the_hover_shows_a_commit_of_a_long_series_in_a_browser(tmp_path):
    """The series page from disk in Chromium: #at=<commit> shows that commit's subject and each case's
    level, median, blocks and processes, as a pointer over it would."""
    import browser
    from bs4 import BeautifulSoup
    from torchbench.publish import publisher

    import hashlib

    _, rows = history(charts.DOTS_UP_TO + 20, processes=4)
    shas = [hashlib.sha1(str(i).encode()).hexdigest() for i in range(charts.DOTS_UP_TO + 20)]
    rename = dict(zip(dict.fromkeys(r.commit for r in rows), shas))  # commits a short sha tells apart
    rows = [dataclasses.replace(r, commit=rename[r.commit]) for r in rows]
    subjects = {sha: f"commit number {i}" for i, sha in enumerate(shas)}
    publisher.render_pages(pages.records(rows), tmp_path / "site", out_dir=tmp_path, project="p",
                           revisions={sha: i for i, sha in enumerate(shas)}, subjects=subjects)
    (page,) = (tmp_path / "site" / "series").glob("*.html")
    loaded = browser.load(f"{page.as_uri()}#at={shas[100][:8]}", tmp_path / "chromium")
    assert not loaded.errors, loaded.console
    (tip,) = BeautifulSoup(loaded.dom, "html.parser").select("figure.chart.hover .hover-tip")
    assert not tip.has_attr("hidden") and tip["data-position"] == "100"
    text = tip.get_text()
    assert text.startswith(f"{shas[100][:8]} commit number 100")
    sub = next(s for s in pages.build(rows, {sha: i for i, sha in enumerate(shas)}, {})[1][0].series
               if s.name == "SubTensor")
    level = sub.points[100].interval.level * 1e6
    assert f"SubTensor: level {level:.4g} us" in text.replace("μs", "us") and "9 blocks from 4 processes" in text
    rule = BeautifulSoup(loaded.dom, "html.parser").select_one("figure.chart.hover svg line.hover-rule")
    x0, x1 = charts.LEFT, charts.WIDTH - charts.RIGHT  # the plot's ends: position 100 lies 100/339 of the way
    assert float(rule["x1"]) == pytest.approx(x0 + 100 / (len(shas) - 1) * (x1 - x0))


def test_the_landing_page_compares_each_release_with_the_release_before():
    """A history of torch releases (run --torch): one commit in each release's environment. Each case's latest
    level is set against the same case in the previous release (by version, not by name: 2.9 before 2.10)."""
    from torchbench.publish import publisher

    sha = "c" * 40
    level = {"2.9.0": 1.0, "2.10.0": 1.5, "2.13.0": 1.5}  # 2.10 made SubTensor 50% slower, 2.13 left it
    jitter = (0.99, 1.0, 1.01, 1.005)  # four processes' levels a cell: between-process evidence

    def at(torch, case):
        value = 1e-6 if case == "Tensor" else 3e-6 * level[torch]
        return row(sha, case, value, env=f"virtualenv-py3.11-torch{torch}", levels=tuple(value * j for j in jitter))
    rows = [at(torch, case) for torch in ("2.13.0", "2.9.0", "2.10.0") for case in ("Tensor", "SubTensor")]
    compare_pages, series_pages = pages.build(rows, {sha: 0}, {})
    (label,) = publisher._landing_context(compare_pages, series_pages, [])
    assert label["releases"]
    sub = {c["release"] and c["release"].env_short: c for c in label["cases"] if c["name"] == "SubTensor"}
    by_release = {c["commit"].env_short: c for c in label["cases"] if c["name"] == "SubTensor"}
    assert by_release["torch 2.9.0"]["release"] is None  # the oldest release has none before it
    assert by_release["torch 2.10.0"]["release"].env_short == "torch 2.9.0"
    assert by_release["torch 2.10.0"]["release_change"] == "+50.0%"
    assert by_release["torch 2.10.0"]["release_direction"] == "slower"
    assert by_release["torch 2.13.0"]["release"].env_short == "torch 2.10.0"
    assert by_release["torch 2.13.0"]["release_change"] == "+0.0%" and not by_release["torch 2.13.0"]["release_direction"]
    assert all(c["change"] is None for c in label["cases"])  # one commit: nothing before it
    assert sub  # every release's case is listed


def test_a_chart_of_rows_far_apart_is_drawn_on_a_log_axis_where_a_small_rows_step_shows():
    """Rows of 2 us and 1 ms in one chart: on a linear axis the 2 us row's 5% step would be under a pixel."""
    small = [charts.Mark(i, v, math.nan, math.nan, None, "") for i, v in enumerate([2.0, 2.0, 2.1, 2.1])]
    large = [charts.Mark(i, 1000.0, math.nan, math.nan, None, "") for i in range(4)]
    c = charts.chart("t", "us", [charts.Line("small", small), charts.Line("large", large)], {})
    assert c.log_axis
    labels = [label for _, label in c.y_ticks]
    assert "2" in labels and "1,000" in labels
    near = charts.chart("t", "us", [charts.Line("a", small)], {})
    assert not near.log_axis  # values within a factor of four keep the linear axis


def test_no_two_cases_of_a_page_share_a_colour():
    names = [f"case {i}" for i in range(14)]
    colors = charts.colors_for(names)
    assert len(set(colors.values())) == 14
    assert charts.colors_for(names[:3]) == dict(zip(names[:3], charts.PALETTE[:3]))
