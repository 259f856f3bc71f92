"""The published pages' content, as data: Compare tables across commits and envs, and series.

    results (ResultSet) -> ComparePage per label, SeriesPage per label -> publisher (HTML)

An *env* is one commit measured in one asv environment on one machine: the
unit a Compare table groups its rows by. Its id (machine.envhash.commit12) is
the same in every publish, so links to a table row stay valid as the history
grows. The tables are laid out by torchbench_core.Compare itself
(`Compare.tables()`), so a page and the printed table cannot disagree; the
statistics come from stats.py, as for the alerts.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, NamedTuple

import numpy as np

from torchbench_core import Compare, Measurement, TaskSpec
from torchbench_core.compare import TableView
from torchbench_core.units import _UNITS, select_unit, unit_to_english

from .. import stats
from ..asv_bridge.results import Row

__all__ = ["ComparePage", "EnvInfo", "Point", "Record", "Series", "SeriesPage", "build", "build_from", "env_id_of",
           "records", "slug", "DEFAULT_COMMITS"]

DEFAULT_COMMITS = 5  # the Compare pages open on the last five commits
_TORCH_IN_NAME = re.compile(r"(?:^|-)torch([0-9][^-]*)")  # asv names an environment by its requirements
COUNT_UNIT = "instructions"
OVERHEAD_BASELINE = "Tensor"  # the sub_label the overhead of the other cases is measured against


def slug(text: str) -> str:
    """A file/anchor-safe name that stays the same across publishes (readable part + short hash)."""
    readable = re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()[:40] or "x"
    return f"{readable}-{hashlib.sha1(text.encode()).hexdigest()[:6]}"


@dataclass(frozen=True)
class EnvInfo:
    id: str
    machine: str
    env_name: str
    commit: str
    position: int  # order in the history (asv's revisions; by date where a commit is not on the branch)
    subject: str

    @property
    def short(self) -> str:
        return self.commit[:8]

    @property
    def env_short(self) -> str:
        """The environment for a row tag or a legend: its torch release where asv's name has one (a history of
        torch releases groups by it), else its name cut short (the full name is in the tag's tooltip)."""
        torch = _TORCH_IN_NAME.search(self.env_name)
        if torch:
            return f"torch {torch.group(1)}"
        return self.env_name if len(self.env_name) <= 24 else self.env_name[:23] + "…"

    @functools.cached_property
    def group(self) -> str:
        """Envs of one group (a machine and an asv environment) are compared with each other."""
        return f"{self.machine}.{self.id.split('.')[1]}"


@dataclass(slots=True)
class CellData:
    """One case on one env: small, since a site of 2000 commits x 200 cases holds 400,000 of them."""

    interval: stats.Interval
    samples: np.ndarray | None  # per-call times (or counts); kept only for commits a table opens on
    number: int
    benchmark: str
    index: int
    counts: stats.Interval | None = None  # the same case's instructions per call, where its suite counts them

    def measurement(self, label: str, key: tuple[str, int, str, str | None]) -> Measurement:
        """Made when a table needs it: a site of 2000 commits shows 5 by default."""
        env, threads, name, column = key
        spec = TaskSpec(stmt=self.benchmark, setup="pass", label=label, sub_label=name, description=column,
                        env=env, num_threads=threads)
        # Without its samples (an old commit, chosen in a table) a cell is its median, which is all
        # a Compare cell shows.
        samples = self.samples if self.samples is not None else (self.interval.median,)
        return Measurement(self.number, [float(s) * self.number for s in samples], spec)


@dataclass
class ComparePage:
    label: str
    slug: str
    unit_kind: str  # "time" or COUNT_UNIT
    envs: list[EnvInfo]  # every env with data for this label, in history order
    cells: dict[tuple[str, int, str, str | None], CellData]  # (env id, threads, row name, column) -> cell
    columns: list[str | None]
    default_envs: list[str] = field(default_factory=list)

    def table(self, env_ids: list[str]) -> TableView:
        """The Compare table of these envs (rows in history order), as torchbench_core lays it out."""
        chosen = set(env_ids)
        compare = Compare(c.measurement(self.label, key) for key, c in self.cells.items() if key[0] in chosen)
        if self.unit_kind == COUNT_UNIT:
            compare.as_counts(COUNT_UNIT)
        view = compare.tables()[0]
        order = {e.id: e.position for e in self.envs}
        rows = sorted(view.rows, key=lambda r: (r.num_threads, order[r.env]))
        return TableView(view.label, view.columns, tuple(rows), view.unit, view.footer)

    def baselines(self, env_ids: list[str]) -> dict[str, str]:
        """Per env group, the oldest chosen env: what the other cells are coloured against."""
        out: dict[str, str] = {}
        for env in sorted((e for e in self.envs if e.id in set(env_ids)), key=lambda e: e.position):
            out.setdefault(env.group, env.id)
        return out

    def differ(self, env_id: str, threads: int, name: str, column, baselines: dict[str, str]) -> int:
        env = self.env(env_id)
        base = baselines.get(env.group)
        if base is None or base == env_id:
            return 0
        a, b = self.cells.get((base, threads, name, column)), self.cells.get((env_id, threads, name, column))
        return 0 if a is None or b is None else stats.cells_differ(a.interval, b.interval)

    def tag(self, env: EnvInfo) -> str:
        """How a row names its env: the commit, plus the machine and environment where the page has several."""
        many_machines, many_envs = self._many
        parts = [env.short]
        if many_machines:
            parts.append(env.machine)
        if many_envs:
            parts.append(env.env_short)
        return " ".join(parts)

    @functools.cached_property
    def _many(self) -> tuple[bool, bool]:
        return len({e.machine for e in self.envs}) > 1, len({e.env_name for e in self.envs}) > 1

    def env(self, env_id: str) -> EnvInfo:
        return self._by_id[env_id]

    @functools.cached_property
    def _by_id(self) -> dict[str, EnvInfo]:  # a cell's env is looked up per cell: not a scan of 2000
        return {e.id: e for e in self.envs}

    def data(self) -> dict:
        """What the page's script needs to re-lay the table for other commits and baselines."""
        scale_unit, scale = (COUNT_UNIT, 1.0) if self.unit_kind == COUNT_UNIT else select_unit(
            min(c.interval.median for c in self.cells.values()))
        cells: dict[str, dict[str, list]] = {}
        counts: dict[str, dict[str, float]] = {}  # instructions per call beside the times, where counted
        for (env, threads, name, column), c in self.cells.items():
            key = f"{threads}|{name}|{'' if column is None else column}"
            i = c.interval
            cells.setdefault(env, {})[key] = [i.median, None if math.isnan(i.low) else i.low,
                                              None if math.isnan(i.high) else i.high, i.n]
            if c.counts is not None:
                counts.setdefault(env, {})[key] = c.counts.median
        # Compare's row order: by thread count, then as the results came (a site of 2000
        # commits would pay for a whole Compare per page to learn just this).
        rows = sorted(dict.fromkeys((k[1], k[2]) for k in self.cells), key=lambda r: r[0])
        return {"label": self.label, "unit": scale_unit, "scale": scale, "counts": self.unit_kind == COUNT_UNIT,
                "units": {str(k): [name, s, unit_to_english(name)] for k, (name, s) in _UNITS.items()},
                "rows": [[t, name, slug(name)] for t, name in rows],
                "columns": ["" if c is None else c for c in self.columns], "floor": stats.PAGE_FLOOR,
                "confidence": stats.PAGE_CONFIDENCE,
                "envs": [{"id": e.id, "group": e.group, "machine": e.machine, "env": e.env_name,
                          "tag": self.tag(e),
                          "commit": e.commit, "short": e.short, "subject": e.subject, "pos": e.position}
                         for e in self.envs],
                "default": self.default_envs, "cells": cells, "instructions": counts}


@dataclass(frozen=True, slots=True)
class Point:
    env: EnvInfo
    interval: stats.Interval
    benchmark: str
    index: int


@dataclass
class Series:
    name: str  # the row (sub_label)
    column: str | None  # the description
    threads: int
    group: str  # EnvInfo.group: a history is drawn per machine and environment
    group_label: str  # machine · environment, for the legend where a page has several groups
    points: list[Point]
    overhead: list[tuple[EnvInfo, float, float, float]] | None = None  # (env, ns, low ns, high ns) vs baseline


@dataclass
class SeriesPage:
    label: str
    slug: str
    unit_kind: str
    series: list[Series]
    overhead_baseline: str | None  # sub_label the overhead is measured against, when the label has it


class Record(NamedTuple):
    """What the pages keep of one measured row: made once per result file (and kept between publishes
    by page_cache, so that an unchanged file is not read again)."""

    machine: str
    commit: str
    env_name: str
    date: int
    label: str
    name: str  # sub_label
    description: str | None
    threads: int
    counts: bool  # instruction counts, not times
    interval: tuple[float, float, float, int, float]  # stats.Interval's fields: plain data pickles fast
    # (publish/page_cache.py)
    samples: bytes  # per call, float64 (np.frombuffer): likewise
    number: int
    benchmark: str
    index: int


def records(rows: Iterable[Row]) -> Iterator[Record]:
    """The measured rows (failed and skipped ones have no cell) as the pages need them."""
    for row in rows:
        if row.status != "ok" or not (row.samples or row.value is not None):
            continue
        label, name, description, threads = row.placement()
        samples = np.asarray(row.samples or (row.value,), dtype=float)
        i = stats.interval(samples)
        yield Record(row.machine, row.commit, row.env_name, row.date or 0, label, name, description, threads,
                     row.unit == COUNT_UNIT, (i.median, i.low, i.high, i.n, i.level), samples.tobytes(),
                     row.number or 1, row.benchmark, row.index)


def env_id_of(row: Row | Record) -> str:
    """The id of the env a row belongs to: machine.envhash.commit12, the same in every publish."""
    return f"{row.machine}.{_env_hash(row.env_name)}.{row.commit[:12]}"


@functools.lru_cache(maxsize=1024)
def _env_hash(env_name: str) -> str:
    return hashlib.sha1(env_name.encode()).hexdigest()[:6]


def _positions(dates: dict[str, float], revisions: dict[str, int]) -> dict[str, int]:
    """History order: asv's revision numbers; commits off the branch after them, by date."""
    top = max(revisions.values(), default=-1)
    off = sorted((c for c in dates if c not in revisions), key=lambda c: (dates[c], c))
    return {**{c: revisions[c] for c in dates if c in revisions}, **{c: top + 1 + i for i, c in enumerate(off)}}


def build(rows: Iterable[Row], revisions: dict[str, int],
          subjects: dict[str, str] | Callable[[set[str]], dict[str, str]],
          default_commits: int = DEFAULT_COMMITS) -> tuple[list[ComparePage], list[SeriesPage]]:
    """Compare and series pages for every label with measured results (rows are read once, as they come).

    subjects: commit subjects by sha, or a function giving them for the commits found."""
    return build_from(records(rows), revisions, subjects, default_commits)


def build_from(found: Iterable[Record], revisions: dict[str, int],
               subjects: dict[str, str] | Callable[[set[str]], dict[str, str]],
               default_commits: int = DEFAULT_COMMITS) -> tuple[list[ComparePage], list[SeriesPage]]:
    """build, from records."""
    env_records: dict[str, Record] = {}
    dates: dict[str, float] = {}
    by_label: dict[str, dict[tuple, CellData]] = {}
    # The default tables show the last commits: the branch's newest, and any commit off it (those
    # come after the branch). Only their cells keep their samples; the rest keep their interval.
    recent = set(sorted(revisions, key=revisions.get)[-default_commits:])
    counted: dict[str, dict[tuple, CellData]] = {}  # instruction counts (a CountsSuite, or a counts label)
    for r in found:
        env_id = env_id_of(r)
        env_records.setdefault(env_id, r)
        dates[r.commit] = min(dates.get(r.commit, math.inf), r.date)
        keep = r.commit in recent or r.commit not in revisions
        (counted if r.counts else by_label).setdefault(r.label, {})[(env_id, r.threads, r.name, r.description)] = \
            CellData(stats.Interval(*r.interval), np.frombuffer(r.samples) if keep else None, r.number, r.benchmark,
                     r.index)
    kinds = {label: "time" for label in by_label}
    for label, cells in counted.items():
        if label in by_label:  # counts of timed cases: shown beside their times
            timed = by_label[label]
            for key, c in cells.items():
                if key in timed:
                    timed[key].counts = c.interval
        else:  # a label of counts alone: its own page, in instructions
            by_label[label], kinds[label] = cells, COUNT_UNIT
    positions = _positions(dates, revisions)
    if callable(subjects):
        subjects = subjects(set(dates))
    envs = {env_id: EnvInfo(env_id, r.machine, r.env_name, r.commit, positions[r.commit], subjects.get(r.commit, ""))
            for env_id, r in env_records.items()}

    compare_pages, series_pages = [], []
    for label in sorted(by_label):
        cells = by_label[label]
        label_envs = sorted({envs[k[0]] for k in cells}, key=lambda e: (e.position, e.id))
        columns = list(dict.fromkeys(k[3] for k in sorted(cells, key=lambda k: (envs[k[0]].position, k[1]))))
        page = ComparePage(label, slug(label), kinds[label], label_envs, cells, columns)
        last = sorted({e.position for e in label_envs})[-default_commits:]
        page.default_envs = [e.id for e in label_envs if e.position in last]
        compare_pages.append(page)
        series_pages.append(_series_page(page))
    return compare_pages, series_pages


def _series_page(page: ComparePage) -> SeriesPage:
    order = {e.id: e for e in page.envs}
    by_key: dict[tuple, list[Point]] = {}
    for (env, threads, name, column), c in page.cells.items():
        by_key.setdefault((threads, name, column, order[env].group), []).append(
            Point(order[env], c.interval, c.benchmark, c.index))
    series = []
    for key in sorted(by_key, key=lambda k: (k[0], str(k[2]), k[1], k[3])):
        threads, name, column, group = key
        points = sorted(by_key[key], key=lambda p: (p.env.position, p.env.id))
        first = points[0].env
        series.append(Series(name, column, threads, group, f"{first.machine} · {first.env_short}", points))
    names = {s.name for s in series}
    baseline = OVERHEAD_BASELINE if OVERHEAD_BASELINE in names and len(names) > 1 and page.unit_kind == "time" else None
    if baseline:
        baselines = {(b.column, b.threads, b.group): b for b in series if b.name == baseline}
        for s in series:
            match = baselines.get((s.column, s.threads, s.group))
            if match is None:
                continue
            base = {p.env.id: p.interval for p in match.points}
            s.overhead = [(p.env, *_difference_ns(p.interval, base[p.env.id])) for p in s.points
                          if p.env.id in base]
    return SeriesPage(page.label, page.slug, page.unit_kind, series, baseline)


def _difference_ns(case: stats.Interval, base: stats.Interval) -> tuple[float, float, float]:
    """case - baseline in ns, with a conservative band: the extremes of the two intervals."""
    low = case.low - base.high if not (math.isnan(case.low) or math.isnan(base.high)) else math.nan
    high = case.high - base.low if not (math.isnan(case.high) or math.isnan(base.low)) else math.nan
    return (case.median - base.median) * 1e9, low * 1e9, high * 1e9
