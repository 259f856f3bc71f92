"""asv publisher plugin: torchbench's pages inside every asv site (plugins: [".torchbench.publisher"]).

asv runs every imported OutputPublisher subclass after it has emptied
html_dir and copied its own www/ there, so `torchbench publish` and a plain
`asv publish` both produce:

    html/torchbench/index.html              every label at a glance: each case's sparkline and latest
                                            change, the label's recent confirmed regressions, links
                                            to its Compare and series pages
    html/torchbench/compare/<label>.html    Compare-style table across commits and envs
    html/torchbench/series/<label>.html     the label's cases over the history: each commit's level
                                            (what step detection uses), median and band, the steps
                                            marked; the __torch_function__ overhead against plain Tensor;
                                            hovering shows a commit's values and the processes behind
                                            them (static/series.js, for lines too long for a dot each)
    html/torchbench/regressions.html        steps in the history, joined with `torchbench find`'s
                                            confirmations and culprits (steps_page.py; also
                                            regressions.json, and asv's feed html/regressions.xml)
    html/torchbench/profiles/...            flame graphs (recorded by `torchbench profile`
                                            outside html_dir, copied in on every publish) and
                                            differential flame graphs between adjacent commits

Every page is rendered by jinja2 (autoescape on) from html_templates/, carries
its data inline and draws its charts as inline SVG, so it works opened from
disk. asv's nav bar gets one link to our index, and asv's own page is pointed
at local copies of its CDN scripts (assets.py) when npm can fetch them.
Results are read through asv_bridge/results.py (asv's own Results API); a malformed
file is named in a warning on our index page and skipped.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import math
import shutil
import sys
from pathlib import Path
from typing import Callable, NamedTuple

import numpy as np
from asv.publishing import OutputPublisher
from packaging.version import InvalidVersion, Version
from torchbench_core.units import select_unit

from .. import resources, stats
from ..asv_bridge import results
from ..history import changepoints
from ..history.step_record import CONFIRMED, shown_status
from ..profiling import flamegraph
from . import assets, charts, forked, page_cache, pages, steps_page

__all__ = ["TorchbenchPages", "render_pages", "render_site", "row_anchor"]

SITE = "torchbench"  # our folder inside html_dir
NAV_ITEM = (f'<li id="nav-li-torchbench"><a href="{SITE}/index.html">Compare tables &amp; flame graphs</a></li>'
            f'<li id="nav-li-torchbench-steps"><a href="{SITE}/regressions.html">Steps</a></li>')


def _environment():
    # tojson_script: the differential page's, for the same reason
    return resources.jinja_environment(filters={"tojson_script": flamegraph.script_json},
                                       globals={"anchor": steps_page.anchor, "shown_status": shown_status},
                                       trim_blocks=True, lstrip_blocks=True)


def _subjects(repo_path: str | None, shas: set[str]) -> dict[str, str]:
    """Commit subjects for the pages (gitpython): one `git log` for all of them (a history of 2000 commits
    read one commit at a time took 0.34 s, one log 0.06 s); one at a time where the log refuses a sha
    (one not in the repository); none where the repository cannot be read."""
    if not repo_path:
        return {}
    try:
        import git

        repo = git.Repo(repo_path)
        try:  # the first line of each message, as Commit.summary gives it (%s would join a paragraph's lines)
            text = repo.git.log("--no-walk=unsorted", "--format=%H%x01%B%x02", *sorted(shas)) if shas else ""
            out = {}
            for record in text.split("\x02"):
                sha, found, message = record.partition("\x01")
                if found:
                    out[sha.strip()] = message.split("\n", 1)[0]
            return out
        except git.GitCommandError:
            pass
        out = {}
        for sha in shas:
            try:
                out[sha] = repo.commit(sha).summary
            except (ValueError, git.BadName):
                continue
        return out
    except (git.exc.GitError, OSError):
        return {}


def _cell_class(change: pages.Change) -> str:
    """A cell's (or a landing change's) classes: its colour, and "candidate" past an unconfirmed step."""
    return {1: "slower", -1: "faster"}.get(change.direction, "") + (
        " candidate" if change.reason == stats.CANDIDATE else "")


def _change_text(change: pages.Change) -> str:
    """Why a cell has its colour, for its tooltip; compare.js `changeText` writes the same."""
    if change.reason == stats.STEP:
        return "a confirmed step lies between it and its baseline (Steps page)"
    if change.reason == stats.CANDIDATE:
        return "an unconfirmed step lies between it and its baseline: a candidate, not yet a change"
    if change.reason == stats.ONE_PROCESS:
        return "measured by one process: no between-process evidence, not coloured"
    if change.reason == stats.NO_LEVELS:
        return "its processes' levels were not kept: not coloured"
    if change.reason == stats.EVIDENCE:
        return f"differs from its baseline across processes (p = {change.p:.2g})"
    if not math.isnan(change.p):
        return f"no change shown across processes (p = {change.p:.2g})"
    return ""


def _common_text(ratio: float) -> str:
    """A commit whose cells all moved together: the machine, not the code (compare.js `commonText`)."""
    if abs(math.log(ratio)) < math.log1p(stats.PAGE_FLOOR):
        return ""
    return f"all cells {steps_page.percent(ratio)} together: the machine's state, taken out before colouring"


def _compare_context(page: pages.ComparePage, profiles: dict, steps: list[dict] = ()) -> dict:
    chosen = page.default_envs
    baselines = page.baselines(chosen)
    changes = page.changes(chosen, baselines, steps)
    view = page.table(chosen)
    envs = {e.id: e for e in page.envs}
    blocks: list[dict] = []
    for row in view.rows:
        if not blocks or blocks[-1]["threads"] != row.num_threads:
            blocks.append({"threads": row.num_threads, "rows": []})
        env = envs[row.env]
        cells = []
        for column, cell in zip(view.columns, row.cells):
            if cell is None:
                cells.append(None)
                continue
            key = (row.env, row.num_threads, row.name, column)
            data = page.cells[key]
            i = data.interval
            change = changes.of(key)
            why = _change_text(change)
            cells.append({
                "text": cell.text, "direction": _cell_class(change),
                "ci": _ci_text(i, page.unit_kind) + (f"; {why}" if why else ""),
                "baseline": baselines.get(env.group) == row.env,
                "profile": profiles.get((env.commit, data.benchmark, data.index)),
                "counts": None if data.counts is None else f"{data.counts.median:,.0f}",
            })
        blocks[-1]["rows"].append({"id": row_anchor(env, row.num_threads, row.name), "env": env, "name": row.name,
                                   "cells": cells, "common": _common_text(changes.common.get(env.id, 1.0)),
                                   "first_of_env": not blocks[-1]["rows"]
                                   or blocks[-1]["rows"][-1]["env"].id != env.id})
    data = page.data(steps)
    if profiles:  # each cell's flame graph, where it has one (the script writes the CI tooltip itself)
        for (env_id, threads, name, column), c in page.cells.items():
            profile = profiles.get((envs[env_id].commit, c.benchmark, c.index))
            if profile:
                data["cells"][env_id][f"{threads}|{name}|{'' if column is None else column}"].append(profile)
    return {"page": page, "view": view, "blocks": blocks, "data": data, "floor": stats.PAGE_FLOOR,
            "confidence": stats.PAGE_CONFIDENCE, "q": stats.PAGE_Q, "level_quantile": stats.LEVEL_QUANTILE}


def _ci_text(i: stats.Interval, kind: str) -> str:
    """A cell's tooltip; html_templates/static/compare.js `ciText` writes the same for the cells it lays."""
    if kind != pages.TIME_UNIT:  # values as they are (instructions, a ratio, bytes)
        median = f"median {i.median:.6g}"
        ci = "" if math.isnan(i.low) else f", {stats.PAGE_CONFIDENCE:.0%} CI {i.low:.6g} to {i.high:.6g}"
    else:
        name, scale = select_unit(i.median)
        median = f"median {i.median / scale:.4g} {name}"
        ci = ("" if math.isnan(i.low) else
              f", {stats.PAGE_CONFIDENCE:.0%} CI {i.low / scale:.4g} to {i.high / scale:.4g} {name}")
    return f"level; {median}{ci} ({i.n} blocks)"


def row_anchor(env: pages.EnvInfo, threads: int, name: str) -> str:
    """The id of a table row: stable across publishes (the alert comment links to it)."""
    return f"r-{env.id}-{threads}-{pages.slug(name)}".replace(".", "-")


DASHES = ["", "6 3", "2 3", "8 3 2 3"]  # one per (machine, environment) on a page
SPARK_COMMITS = 40  # the landing page's sparklines show each case's last commits
RECENT_REGRESSIONS = 3  # confirmed regressions listed per label on the landing page


def _step_marks(steps: list[dict], members: list[pages.Series]) -> list[charts.StepMark]:
    """The steps of these series' rows (same benchmark row, machine and environment), as chart rules at their
    first commit at the new level, each linked to its entry on the Steps page."""
    if not steps:
        return []
    at = {}
    for s in members:
        c = s.cells
        for env, b, i in zip(s.envs(), c.benchmark[s.at].tolist(), c.index[s.at].tolist()):
            at[(env.machine, env.env_name, c.benchmarks[b], i, env.commit)] = env.position
    marks = []
    for step in steps:
        x = at.get((step["machine"], step["env_name"], step["benchmark"], step["index"], step["after"]))
        if x is None:
            continue
        kind = "confirmed" if step["status"] == CONFIRMED else step["status"]
        marks.append(charts.StepMark(
            x, step["status"], f"../regressions.html#{steps_page.anchor(step)}",
            f"{kind} step {steps_page.percent(step['ratio'])}: {step['name']} at {step['after'][:8]} "
            f"{step.get('subject_after') or ''} (Steps page)"))
    return marks


def _measured_by(n: int, processes: int) -> str:
    """How many blocks a commit's value pools, and from how many processes where they were counted."""
    if processes:
        return f"{n} blocks from {processes} process{'es' if processes != 1 else ''}"
    return f"{n} blocks (processes not counted)"


def _hover(chart: charts.Chart, lines: list[tuple[str, pages.Series]], scale: float) -> dict | None:
    """What series.js needs to show the nearest commit's values under the pointer, for a chart whose lines
    are too long for a dot per commit (charts.DOTS_UP_TO): per line its positions, levels, medians, blocks
    and processes (numbers only: the page's commit list gives the subjects)."""
    if not any(len(s.at) > charts.DOTS_UP_TO for _, s in lines):
        return None
    out = []
    for name, s in lines:
        out.append({"name": name, "pos": [e.position for e in s.envs()],
                    "level": np.round(s.values("level") / scale, 6).tolist(),
                    "median": np.round(s.values("median") / scale, 6).tolist(),
                    "n": s.values("n").astype(int).tolist(), "p": s.cells.processes[s.at].tolist()})
    return {"plot": list(chart.plot), "range": list(chart.x_range), "unit": chart.y_label, "lines": out}


def _series_context(page: pages.SeriesPage, profiles: dict, diffs: dict, steps: list[dict] = ()) -> dict:
    groups: dict[tuple, list[pages.Series]] = {}
    for s in page.series:
        groups.setdefault((s.threads, s.column), []).append(s)
    x_labels = {e.position: e.short for e in page.envs}
    colors = charts.colors_for(s.name for s in page.series)
    env_groups = list(dict.fromkeys(s.group for s in page.series))
    dash = {g: DASHES[i % len(DASHES)] for i, g in enumerate(env_groups)}

    def legend(s: pages.Series) -> str:
        return s.name if len(env_groups) == 1 else f"{s.name} [{s.group_label}]"

    panels = []
    for (threads, column), members in groups.items():
        unit_name, scale = pages.display_unit(page.unit_kind, min(float(s.values("median").min()) for s in members))

        def point_tip(s: pages.Series, envs: list[pages.EnvInfo], values: np.ndarray, processes: np.ndarray,
                      unit: str = unit_name) -> Callable[[int], str]:
            # made only for the dots drawn (a long history draws few), not 400,000 strings
            def tip(i: int) -> str:
                env, v = envs[i], values[i]
                return (f"{legend(s)} @ {env.short} {env.subject}: level {v[4]:.4g} {unit}, median {v[0]:.4g} "
                        f"{unit} ({_measured_by(int(v[3]), int(processes[i]))})")
            return tip

        def hrefs(s: pages.Series, envs: list[pages.EnvInfo]) -> list[str | None]:
            if not profiles:
                return [None] * len(envs)
            c = s.cells
            return [profiles.get((e.commit, c.benchmarks[b], i))
                    for e, b, i in zip(envs, c.benchmark[s.at].tolist(), c.index[s.at].tolist())]

        lines = []
        for s in members:
            envs = s.envs()
            values = s.cells.intervals[s.at] / np.array([scale, scale, scale, 1.0, scale])
            marks = charts.Marks([e.position for e in envs], values[:, 4], values[:, 1], values[:, 2], values[:, 0],
                                 hrefs(s, envs) if profiles else None,
                                 point_tip(s, envs, values, s.cells.processes[s.at]))
            lines.append(charts.Line(legend(s), marks, case=s.name, dash=dash[s.group]))
        title = f"{column} ({threads} thread{'s' if threads != 1 else ''})" if column else f"{threads} threads"
        time_chart = charts.chart(title, unit_name, lines, x_labels, colors, steps=_step_marks(steps, members))
        time_chart.hover = _hover(time_chart, [(legend(s), s) for s in members], scale)
        relative_chart = None
        if len(members) > 1:  # rows of different sizes: each against its own median level, so a small row's
            # 5% step is as visible as a large row's (on the chart above, a 2 us row lies flat under a 1 ms one)
            r_lines = []
            for line, s in zip(lines, members):
                marks = line.marks
                middle = float(np.nanmedian(marks.y)) if len(marks.y) else math.nan

                def r_tip(i: int, marks=marks, middle=middle) -> str:
                    return f"{marks.title(i)}; {marks.y[i] / middle:.3f} x its median level"
                r_lines.append(charts.Line(line.name, charts.Marks(marks.x, marks.y / middle, np.full(len(marks), math.nan),
                                                                   np.full(len(marks), math.nan),
                                                                   np.full(len(marks), math.nan), marks.hrefs, r_tip),
                                           case=line.case, dash=line.dash))
            relative_chart = charts.chart(f"{title}, each case against its own median level", "x median", r_lines,
                                          x_labels, colors, steps=_step_marks(steps, members), from_zero=False)
        overhead_chart = None
        if page.overhead_baseline:
            o_lines = []
            for s in members:
                overhead = s.overhead
                if not overhead:
                    continue
                if profiles:
                    envs = s.envs()
                    where = dict(zip((e.id for e in envs), hrefs(s, envs)))
                else:
                    where = {}
                o_envs = [env for env, *_ in overhead]
                ns = np.array([x for _, x, _, _ in overhead])

                def o_tip(i: int, s=s, o_envs=o_envs, ns=ns) -> str:
                    return f"{legend(s)} @ {o_envs[i].short}: {ns[i]:.4g} ns over {page.overhead_baseline}"

                marks = charts.Marks([env.position for env in o_envs], ns, [lo for *_, lo, _ in overhead],
                                     [hi for *_, hi in overhead], np.full(len(ns), math.nan),
                                     [where.get(env.id) for env in o_envs] if where else None, o_tip)
                o_lines.append(charts.Line(legend(s), marks, case=s.name, dash=dash[s.group]))
            overhead_chart = charts.chart(f"overhead over {page.overhead_baseline}: {title}", "ns", o_lines,
                                          x_labels, colors)
        flame_rows, profiled = _flame_rows(members, legend, profiles, diffs) if profiles else ([], {})
        panels.append({"time": time_chart, "relative": relative_chart, "overhead": overhead_chart, "flames": flame_rows,
                       "commits": sorted(profiled.values(), key=lambda e: e.position)})
    commits = {e.position: [e.short, e.subject] for e in page.envs}
    return {"page": page, "panels": panels, "level_quantile": stats.LEVEL_QUANTILE, "commits": commits,
            "log_axis_ratio": charts.LOG_AXIS_RATIO}


def _flame_rows(members: list[pages.Series], legend: Callable[[pages.Series], str], profiles: dict,
                diffs: dict) -> tuple[list[dict], dict[int, pages.EnvInfo]]:
    """Flame-graph columns, only for the commits that have one (a long history has few)."""
    profiled = {p.env.position: p.env for s in members for p in s.points
                if (p.env.commit, p.benchmark, p.index) in profiles}
    flame_rows = []
    for s in members:
        row = {"name": legend(s), "at": {}}
        previous = None
        for p in s.points:
            key = (p.env.commit, p.benchmark, p.index)
            if p.env.position in profiled:
                row["at"][p.env.position] = {"env": p.env, "profile": profiles.get(key),
                                             "diff": diffs.get((previous, key)) if previous else None}
            previous = key
        flame_rows.append(row)
    return flame_rows, profiled


def _release(env: pages.EnvInfo) -> Version | None:
    """The torch release of an env asv named by it (`run --torch`), as a comparable version; None otherwise."""
    found = pages.torch_release(env.env_name)
    try:
        return Version(found) if found else None
    except InvalidVersion:
        return None


class _Pair(NamedTuple):
    """A landing-page change: a case's latest point against an earlier one, and the steps between them."""

    before: pages.Point
    latest: pages.Point
    steps: tuple[float, bool]  # pages.steps_between
    group: str  # the cells whose shared shift is taken out together: one commit's, per kind of change


def _landing_changes(pairs: list[_Pair]) -> list[tuple[str, str, str]]:
    """Each pair's (change text, class, why) by stats.page_changes: the landing page's changes are compared
    together, as a Compare view's cells are."""
    if not pairs:
        return []
    found = stats.page_changes([p.before.interval.level for p in pairs], [p.latest.interval.level for p in pairs],
                               [p.before.spread for p in pairs], [p.latest.spread for p in pairs],
                               [p.group for p in pairs], [p.steps[0] for p in pairs],
                               [p.steps[1] for p in pairs])
    out = []
    for p, d, reason, pv in zip(pairs, found.direction.tolist(), found.reason, found.p.tolist()):
        change = pages.Change(d, reason, pv)
        out.append((steps_page.percent(p.latest.interval.level / p.before.interval.level),
                    _cell_class(change), _change_text(change)))
    return out


def _landing_context(compare_pages: list[pages.ComparePage], series_pages: list[pages.SeriesPage],
                     steps: list[dict]) -> list[dict]:
    """Per label: each case's sparkline of its last levels (one relative scale per label, confirmed steps
    marked), its latest level and its change against the commit before (and, in a history of torch
    releases, against the previous release's latest), coloured by the rule of every page
    (stats.page_changes, the page's changes compared together), and the label's recent confirmed
    regressions."""
    labels = []
    pairs: list[_Pair] = []
    wanted: list[tuple[dict, str]] = []  # (case, which change) for each pair
    for page, series in zip(compare_pages, series_pages):
        colors = charts.colors_for(s.name for s in series.series)
        many_groups = len({s.group for s in series.series}) > 1
        by_row = pages.steps_by_row(steps, page.envs)
        # the same case on the same machine in each torch release, oldest release first
        releases: dict[tuple, list[tuple]] = {}
        for s in series.series:
            first = s.points[0].env
            version = _release(first)
            if version is not None:
                releases.setdefault((s.name, s.column, s.threads, first.machine), []).append((version, s.group))
        previous_release = {}
        for key, found in releases.items():
            found.sort()
            for (_, older), (_, newer) in zip(found, found[1:]):
                previous_release[(key, newer)] = older
        latest_of = {(s.name, s.column, s.threads, s.group): s.points[-1] for s in series.series}
        lasts = [s.points[-SPARK_COMMITS:] for s in series.series]
        scale = charts.spark_scale(([p.interval.level for p in last] for last in lasts), stats.PAGE_FLOOR)
        cases = []
        for s, last in zip(series.series, lasts):
            latest, previous = last[-1], (last[-2] if len(last) > 1 else None)
            unit, scale_unit = pages.display_unit(page.unit_kind, latest.interval.level)
            older = previous_release.get(((s.name, s.column, s.threads, latest.env.machine), s.group))
            release = latest_of.get((s.name, s.column, s.threads, older)) if older else None
            row_steps = by_row.get((s.group, latest.benchmark, latest.index), [])
            confirmed_at = {at for at, ok, _ in row_steps if ok}
            case = {"name": s.name, "column": s.column, "threads": s.threads,
                    "group": s.group_label if many_groups else "",
                    "spark": charts.sparkline([p.interval.level for p in last], scale,
                                              [i for i, p in enumerate(last) if p.env.position in confirmed_at],
                                              color=colors[s.name]),
                    "latest": f"{latest.interval.level / scale_unit:.4g} {unit}", "commit": latest.env,
                    "previous": previous.env if previous else None, "change": None, "direction": "", "why": "",
                    "release": release.env if release else None, "release_change": None,
                    "release_direction": "", "release_why": ""}
            for which, before in (("", previous), ("release_", release)):
                if before is not None and before.interval.level > 0:
                    pairs.append(_Pair(before, latest, pages.steps_between(row_steps, before.env.position,
                                                                            latest.env.position),
                                       f"{which}{latest.env.id}"))
                    wanted.append((case, which))
            cases.append(case)
        regressions = [st for st in steps if st.get("series") == page.slug and st["status"] == CONFIRMED
                       and st["ratio"] > 1][:RECENT_REGRESSIONS]
        labels.append({"page": page, "series": series, "cases": cases, "regressions": regressions,
                       "commits": len({e.commit for e in page.envs}), "spark_scale": charts.scale_text(scale),
                       "releases": any(c["release"] for c in cases)})
    for (case, which), (change, direction, why) in zip(wanted, _landing_changes(pairs)):
        case[f"{which}change"], case[f"{which}direction"], case[f"{which}why"] = change, direction, why
    return labels


def _copy_profiles(out_dir: Path, site: Path, warnings: list[str], commits: set[str] | None) -> tuple[dict, dict]:
    """Copy the recorded flame graphs in (those of `commits`, when given) and vendor the differential
    view's scripts. Returns {(sha, benchmark, index): path from site/} and what _write_diffs needs."""
    found = {k: v for k, v in flamegraph.available(out_dir).items() if commits is None or k[0] in commits}
    if not found:
        return {}, {}
    links = {}
    for key, profile in found.items():
        rel = Path("profiles") / key[0] / key[1] / f"{key[2]}.svg"
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(profile.svg, site / rel)
        links[key] = rel.as_posix()
    try:
        assets = flamegraph.vendor_assets(site, out_dir / "site-assets")
    except (RuntimeError, OSError) as e:
        warnings.append(f"differential flame graphs not written: {e}")
        return links, {}
    return links, {"assets": assets, "found": found}


@contextlib.contextmanager
def _without_cycle_collection():
    """A site of 2000 commits x 200 rows holds over a million small objects (cells, points, marks) that
    live until the pages are written and form no reference cycles; the cyclic collector would traverse
    all of them again and again as they are made. Measured (evaluation/publish_speed.py's data): 60 s with
    it, 31 s without. Reference counting still frees everything; the collector's state is restored, as
    asv runs us in its own process."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class Rendered(NamedTuple):
    compare_pages: list[pages.ComparePage]
    series_pages: list[pages.SeriesPage]
    steps: list[dict]  # what `find_steps` gave (none without it)


def render_site(conf, revisions: dict[str, int]) -> list[str]:
    """Write our pages into conf.html_dir (asv's site); returns the warnings shown on the index page."""
    with _without_cycle_collection():
        return _render_site(conf, revisions, None)


class _Shared(NamedTuple):
    """What asv's publish has parsed for us (setup): the site cache it primed, and what reading said."""

    cache: page_cache.SiteCache
    definitions: results.Definitions
    warnings: list[str]


_rendered: dict[Path, list[str]] = {}  # results folder -> the warnings of the pages written during asv's publish


def _revisions(repo, commits: set[str]) -> dict[str, int]:
    """asv's revision numbers of these commits, as its publish computes them after its first pass
    (Publish.run: the commits with results and the tags, numbered by repo.get_revisions)."""
    return repo.get_revisions(commits | set(repo.get_tags().values()))


AHEAD = 2  # files asv's process may hand the helper unread; past that it reads them itself (see _sharing)


def _sharing(original):
    """asv 0.6.6's Publish.iter_results, taking our records from each Results it parses, and writing our
    pages when its first pass is over.

    asv's publish parses every result file (twice: its parameters, then its graphs) and hands its
    publishers only the graphs, which hold medians; our pages need the samples. asv has no seam for
    this, so this one staticmethod is wrapped (as asv_bridge/plugin.py wraps what it must). On the first
    pass, each Results asv has parsed is handed to a forked helper (forked.Helper), which takes its
    measured cells and makes and stores their records on the other core while asv reads on; when the
    helper falls behind (AHEAD files), asv's process takes the cells itself and hands those over, so
    that neither core waits for the other. When the pass ends, the same helper writes the pages and
    ends: what it used (importing ruptures alone keeps ~70 MiB) goes back before asv's second pass,
    whose graphs hold ~110 MiB of points at 2000 commits x 200 rows. The publisher's `publish` then only
    adds the nav link and the assets. Measured by evaluation/publish_speed.py (docs/results.md#the-site)."""
    def iter_results(conf, repo, range_spec=None):
        results_dir = Path(conf.results_dir).resolve()
        if results_dir in _rendered:  # asv's second pass: our pages are written
            yield from original(conf, repo, range_spec)
            return
        warnings: list[str] = []
        shared = _Shared(page_cache.SiteCache(results_dir.parent), results.Definitions.read(results_dir, warnings),
                         warnings)
        commits = set()

        def take(item) -> None:  # in the helper: a file's records, from asv's parse (no file read again)
            kind, *made = item
            with _without_cycle_collection():
                if kind == "parsed":  # asv's Results: read here
                    try:
                        shared.cache.prime(results.loaded_file(results_dir, made[0], shared.definitions, warnings))
                    except OSError:  # gone since asv read it: our own reading names it
                        pass
                else:  # read in asv's process, which was ahead: its cells, and what reading them said
                    path, stamp, measured, said = made
                    warnings.extend(said)
                    shared.cache.prime(results.ResultFile(path, stamp, None, lambda: measured))

        def hand_over(loaded) -> None:  # in asv's process
            if helper.backlog <= AHEAD:
                helper.put(("parsed", loaded))  # pickled whole, ~0.2 ms: the rest is done on the other core
                return
            said: list[str] = []  # the helper is behind: read it here, as it would have
            try:
                file = results.loaded_file(results_dir, loaded, shared.definitions, said)
                with _without_cycle_collection():
                    measured = file.measure()
            except OSError:
                return
            helper.put(("measured", file.path, file.stamp, measured and measured.packed(), said))

        def finish(conf, revisions: dict[str, int]) -> list[str]:  # in the helper, with what it took
            with _without_cycle_collection():
                return _render_site(conf, revisions, shared)

        with forked.Helper(take, finish, "writing torchbench's pages", prepare=changepoints.prepare) as helper:
            for loaded in original(conf, repo, range_spec):
                commits.add(loaded.commit_hash)
                hand_over(loaded)
                yield loaded
            _rendered[results_dir] = helper.finish(conf, _revisions(repo, commits))

    iter_results._torchbench = True
    return iter_results


def _starting(original):
    """asv's Publish.run, which first forgets what an earlier publish of the same folder in this process
    left (one that failed between asv's two passes): else this publish's first pass would be taken for
    its second, and our pages, which asv has just deleted with the rest of html_dir, not written."""
    def run(cls, conf, *args, **kwargs):
        _rendered.pop(Path(conf.results_dir).resolve(), None)
        return original(cls, conf, *args, **kwargs)

    run._torchbench = True
    return run


def setup() -> None:
    """asv's plugin hook, called once when a configuration loads this module: see _sharing."""
    from asv.commands.publish import Publish

    if not getattr(Publish.iter_results, "_torchbench", False):
        Publish.iter_results = staticmethod(_sharing(Publish.iter_results))
    if not getattr(Publish.run, "_torchbench", False):
        Publish.run = classmethod(_starting(Publish.__dict__["run"].__func__))


def _render_site(conf, revisions: dict[str, int], shared: _Shared | None) -> list[str]:
    html_dir = Path(conf.html_dir)
    out_dir = Path(conf.results_dir).resolve().parent
    project = getattr(conf, "project", "")
    cache = shared.cache if shared else page_cache.SiteCache(out_dir)
    warnings: list[str] = list(shared.warnings) if shared else []
    windows = changepoints.Windows(cache.windows())
    rendered = render_pages(cache.records(Path(conf.results_dir), warnings), html_dir / SITE,
                            out_dir=out_dir, revisions=revisions,
                            subjects=lambda shas: _subjects(getattr(conf, "repo", None), shas),
                            project=project, warnings=warnings, cache=cache,
                            find_steps=lambda series_pages: steps_page.collect(series_pages, revisions, out_dir,
                                                                               warnings, windows=windows))
    cache.keep_windows(windows.used)
    steps = rendered.steps
    steps_page.write(steps, html_dir=html_dir, site=html_dir / SITE, env=_environment(), project=project)
    _add_nav_link(html_dir / "index.html")
    print(f"torchbench: {cache.summary()}", file=sys.stderr)
    return warnings


def render_pages(found, site: Path, *, out_dir: Path, revisions: dict[str, int], subjects, project: str,
                 warnings: list[str] | None = None, commits: set[str] | None = None,
                 cache: page_cache.SiteCache | None = None,
                 find_steps: Callable[[list[pages.SeriesPage]], list[dict]] | None = None,
                 evidence: bool = False) -> Rendered:
    """Our pages for `found` (pages.FileCells: pages.records of result rows, or the site cache's) in `site`,
    with the flame graphs under OUT/profiles (of `commits` only, when given) copied in; a label whose pages
    `cache` holds under the same digest is copied from it. `find_steps` gives the history's steps (as
    steps_page.collect), marked on the series charts and listed on the index. `evidence`: the pages are an
    alert's evidence site (no asv site around them, no Steps page; the navigation links its verdict page)."""
    warnings = warnings if warnings is not None else []
    compare_pages, series_pages = pages.build_from(found, revisions, subjects)
    steps = find_steps(series_pages) if find_steps else []
    by_page: dict[str, list[dict]] = {}
    for step in steps:
        by_page.setdefault(step.get("series"), []).append(step)
    site.mkdir(parents=True, exist_ok=True)
    for static in resources.static().iterdir():
        shutil.copyfile(static, site / static.name)
    profiles, flame = _copy_profiles(out_dir, site, warnings, commits)
    diffs = _write_diffs(site, series_pages, flame) if flame.get("found") else {}

    env = _environment()
    (site / "compare").mkdir(exist_ok=True)
    (site / "series").mkdir(exist_ok=True)
    up = {k: f"../{v}" for k, v in profiles.items()}
    up_diffs = {k: f"../{v}" for k, v in diffs.items()}

    def label(i: int) -> bool:
        """Label i's two pages, copied from the cache (False) or rendered (True)."""
        page, series = compare_pages[i], series_pages[i]
        targets = {"compare.html": site / "compare" / f"{page.slug}.html",
                   "series.html": site / "series" / f"{page.slug}.html"}
        page_steps = by_page.get(page.slug, [])
        digest = _digest(page, up, up_diffs, project, page_steps) if cache else ""
        if cache and cache.page(page.slug, digest, targets):
            return False
        text = env.get_template("compare.html.j2").render(**_compare_context(page, up, page_steps), root="../",
                                                          evidence=evidence)
        targets["compare.html"].write_text(text)
        text = env.get_template("series.html.j2").render(**_series_context(series, up, up_diffs, page_steps),
                                                         root="../", evidence=evidence)
        targets["series.html"].write_text(text)
        if cache:
            cache.keep_page(page.slug, digest, targets)
        return True

    rendered = forked.map_forked(label, len(compare_pages))
    if cache:
        cache.count_pages(rendered=sum(rendered), copied=len(rendered) - sum(rendered))
    index = env.get_template("index.html.j2").render(
        labels=_landing_context(compare_pages, series_pages, steps), warnings=warnings, root="",
        profiles=len(profiles), project=project, percent=steps_page.percent, spark_commits=SPARK_COMMITS,
        evidence=evidence)
    (site / "index.html").write_text(index)
    return Rendered(compare_pages, series_pages, steps)


def _digest(page: pages.ComparePage, profiles: dict, diffs: dict, project: str, steps: list[dict]) -> str:
    """Everything a label's two pages show: its cells (and the samples its default tables keep), its
    commits with their subjects and positions, the flame graphs and differential graphs of its cells, and
    the steps marked on its charts."""
    c = page.cells
    envs = [(e.id, e.machine, e.env_name, e.commit, e.position, e.subject) for e in page.envs]
    h = hashlib.sha1(repr((page.label, page.unit_kind, envs, page.columns, page.default_envs, project, c.slots,
                           c.benchmarks)).encode())
    # the cells' envs as positions in the label's own list: the site's list changes with every new commit
    local = np.full(len(c.envs), -1, dtype=np.int64)
    local[[c.find_env(e.id) for e in page.envs]] = np.arange(len(page.envs))
    for column in (local[c.env], c.slot, c.intervals, c.number, c.benchmark, c.index, c.processes, c.spread):
        h.update(np.ascontiguousarray(column).tobytes())
    if c.counts is not None:
        h.update(c.counts.tobytes())
    for i in sorted(c.samples):
        h.update(repr(i).encode())
        h.update(c.samples[i].tobytes())
    if profiles or diffs:
        shown = {(c.envs[e].commit, c.benchmarks[b], i)
                 for e, b, i in zip(c.env.tolist(), c.benchmark.tolist(), c.index.tolist())}
        h.update(repr(sorted((k, v) for k, v in profiles.items() if k in shown)).encode())
        h.update(repr(sorted((k, v) for k, v in diffs.items() if k[1] in shown)).encode())
    h.update(repr([(st["key"], st["after"], st["status"], st["ratio"], st.get("subject_after")) for st in steps])
             .encode())
    return h.hexdigest()


def _write_diffs(site: Path, series_pages: list[pages.SeriesPage], flame: dict) -> dict:
    """A differential flame graph for each case between each pair of adjacent commits with profiles."""
    found, diffs = flame["found"], {}
    for page in series_pages:
        for s in page.series:
            keys = [(p.env.commit, p.benchmark, p.index) for p in s.points]
            for base, head in zip(keys, keys[1:]):
                if base not in found or head not in found or (base, head) in diffs:
                    continue
                rel = Path("profiles") / "diff" / f"{base[0][:8]}-{head[0][:8]}" / head[1] / f"{head[2]}.html"
                dest = site / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                depth = len(rel.parts) - 1
                flamegraph.write_differential_page(
                    found[base], found[head], dest, "../" * depth + flame["assets"],
                    f"{s.name} · {s.column or ''}: {base[0][:8]} → {head[0][:8]}")
                diffs[(base, head)] = rel.as_posix()
    return diffs


def _add_nav_link(index: Path) -> None:
    """asv's nav bar is hard-coded in www/index.html: add one item after its last page link."""
    if not index.exists():
        return
    text = index.read_text()
    if "nav-li-torchbench" in text:
        return
    anchor = '<li id="nav-li-regressions">'
    at = text.find(anchor)
    if at < 0:
        return
    end = text.find("</li>", at) + len("</li>")
    index.write_text(text[:end] + "\n\t" + NAV_ITEM + text[end:])


class TorchbenchPages(OutputPublisher):
    name = "torchbench"
    button_label = "Compare tables"
    description = "Compare-style tables across commits and envs, series and flame graphs"
    order = 10  # after asv's own (0-3)

    @classmethod
    def publish(cls, conf, repo, benchmarks, graphs, revisions):
        warnings = _rendered.pop(Path(conf.results_dir).resolve(), None)
        if warnings is None:  # not written during asv's publish (see _sharing)
            warnings = render_site(conf, revisions)
        else:  # asv's Regressions publisher has written its feed over ours since
            steps_page.rewrite_feed(Path(conf.html_dir), Path(conf.html_dir) / SITE)
        for warning in warnings:
            print(f"torchbench: warning: {warning}", file=sys.stderr)
        html_dir = Path(conf.html_dir)
        try:
            remaining = assets.localize(html_dir, Path(conf.results_dir).resolve().parent / "site-assets")
        except (RuntimeError, OSError) as e:
            print(f"torchbench: note: asv's page keeps its CDN links ({e})", file=sys.stderr)
        else:
            for url in remaining:
                print(f"torchbench: note: asv's page still loads {url} from the internet", file=sys.stderr)
