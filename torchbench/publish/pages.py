"""The published pages' content, as data: Compare tables across commits and envs, and series.

    results (ResultSet) -> ComparePage per label, SeriesPage per label -> publisher (HTML)

An *env* is one commit measured in one asv environment on one machine: the
unit a Compare table groups its rows by. Its id (machine.envhash.commit12) is
the same in every publish, so links to a table row stay valid as the history
grows. A label's cells are kept as numpy columns (Cells): a first publish of
2000 commits x 200 rows holds 400,000 of them, and objects per cell took 2.8x
`asv publish`'s memory (evaluation/publish_speed.py). The tables are laid out by torchbench_core.Compare itself
(`Compare.tables()`), so a page and the printed table cannot disagree; the
statistics come from stats.py, as for the alerts.
"""

from __future__ import annotations

import collections
import functools
import hashlib
import math
import re
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, NamedTuple

import numpy as np

from torchbench_core import Compare, Measurement, TaskSpec
from torchbench_core.compare import TableView
from torchbench_core.units import _UNITS, select_unit, unit_to_english

from .. import stats
from ..asv_bridge.results import COUNT_UNIT, Measured, Row, measured_of, placement
from ..history.step_record import CONFIRMED, REFUTED

__all__ = ["CellData", "CellKind", "Cells", "ComparePage", "EnvInfo", "FileCells", "Point", "Series", "SeriesPage",
           "build", "build_from", "env_id_of", "file_cells", "records", "slug", "torch_release", "DEFAULT_COMMITS"]

DEFAULT_COMMITS = 5  # the Compare pages open on the last five commits
_TORCH_IN_NAME = re.compile(r"(?:^|-)torch([0-9][^-]*)")  # asv names an environment by its requirements
TIME_UNIT = "time"
OVERHEAD_BASELINE = "Tensor"  # the sub_label the overhead of the other cases is measured against


def fixed_unit_footer(unit: str) -> str:
    """The footer of a table whose values are shown as they are (publisher and compare.js write the same)."""
    return f"Values are {unit} per run (level)." if unit == COUNT_UNIT else f"Values are in {unit} (level)."


def unit_kind(unit: str | None) -> str:
    """How a page shows a benchmark's values: TIME_UNIT (seconds, scaled to ns/us/ms/s), or its own unit as
    the values are (instructions; a track_ method's "bytes" or "compiled/eager")."""
    return TIME_UNIT if unit in (None, "", "seconds") else unit


def display_unit(kind: str, least: float) -> tuple[str, float]:
    """The unit a page shows values of this unit kind in, and what they are divided by: times in ns/us/ms/s
    chosen by the least value, any other unit as the values are."""
    return select_unit(least) if kind == TIME_UNIT else (kind, 1.0)


def slug(text: str) -> str:
    """A file/anchor-safe name that stays the same across publishes (readable part + short hash)."""
    readable = re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()[:40] or "x"
    return f"{readable}-{hashlib.sha1(text.encode()).hexdigest()[:6]}"


def torch_release(env_name: str) -> str | None:
    """The torch release in an asv environment's name (asv names one by its requirements: ...-torch2.13.0)."""
    found = _TORCH_IN_NAME.search(env_name)
    return found.group(1) if found else None


# the tooltip of a cell's instruction count, in the page (compare.html.j2) and where the script redraws it
COUNTS_TITLE = "instructions per call of the code itself, outside the memory allocators and the type cache (callgrind)"


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
        torch = torch_release(self.env_name)
        if torch:
            return f"torch {torch}"
        return self.env_name if len(self.env_name) <= 24 else self.env_name[:23] + "…"

    @functools.cached_property
    def group(self) -> str:
        """Envs of one group (a machine and an asv environment) are compared with each other."""
        return f"{self.machine}.{self.id.split('.')[1]}"


@dataclass(slots=True)
class CellData:
    """One case on one env, as a page asks for it (made from Cells' columns when asked)."""

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
        # A Compare cell shows the commit's level, the value the series plot and step detection use (the
        # median stays in its tooltip): the Measurement is that one value.
        return Measurement(self.number, [float(self.interval.level) * self.number], spec)


CellKey = tuple[str, int, str, "str | None"]  # (env id, threads, row name, column)


def _packed(env, slot, slots: int):
    """A cell's (env, slot) as one int64 (arrays or plain ints): what Cells sorts and searches."""
    return env * max(slots, 1) + slot


def _interval(values: list[float]) -> stats.Interval:
    """An Interval from a row of Cells' interval columns (median, low, high, n, level)."""
    median, low, high, n, level = values
    return stats.Interval(median, low, high, int(n), level)


class Cells(Mapping):
    """A label's cells, (env id, threads, row name, column) -> CellData, kept as columns.

    A site of 2000 commits x 200 rows has 400,000 cells; as objects (a cell, its interval, its key and a
    dict entry each) they took 2.8x `asv publish`'s memory, as numpy columns they take about 100 bytes a
    cell. A cell is a position in the columns; CellData is made only for the cells a page looks at.
    numpy has no keyed columnar table and pandas would be a new dependency for this one structure, so the
    lookup is written here: each cell's (env, slot) packed into one int64, searched in sorted order.
    """

    def __init__(self, envs: list["EnvInfo"], env_of: dict[str, int], env: np.ndarray,
                 slots: list[tuple[int, str, str | None]],
                 slot: np.ndarray, intervals: np.ndarray, number: np.ndarray, benchmarks: list[str],
                 benchmark: np.ndarray, index: np.ndarray, processes: np.ndarray, samples: dict[int, np.ndarray],
                 spread: np.ndarray):
        self.envs = envs  # every env of the site, shared by its labels; `env` holds positions in it
        self._env_of = env_of  # env id -> position in envs (shared too)
        self.env, self.slot, self.slots = env, slot, slots  # slot: a (threads, row name, column) of the label
        self.intervals = intervals  # (cells, 5): stats.Interval's fields
        self.number, self.benchmarks, self.benchmark, self.index = number, benchmarks, benchmark, index
        self.processes = processes  # that measured each cell (0: not counted)
        # (cells, 3): each cell's per-process levels as stats.spread_columns gives them (n 0: none kept)
        self.spread = spread
        self.samples = samples  # cell -> per-call samples, for the cells of the commits a table opens on
        self.counts: np.ndarray | None = None  # (cells, 5) instructions per call beside times; nan: none
        self._slot_of = {key: i for i, key in enumerate(slots)}
        packed = _packed(env.astype(np.int64), slot, len(slots))
        self._order = np.argsort(packed, kind="stable")
        self._sorted = packed[self._order]

    def find(self, key: CellKey) -> int | None:
        """The cell's position in the columns, None where the label has no such cell."""
        env, slot = self._env_of.get(key[0]), self._slot_of.get(key[1:])
        if env is None or slot is None:
            return None
        packed = _packed(env, slot, len(self.slots))
        at = int(np.searchsorted(self._sorted, packed))
        return int(self._order[at]) if at < len(self._sorted) and self._sorted[at] == packed else None

    def find_all(self, other: "Cells") -> np.ndarray:
        """For each of OTHER's cells, its position here (-1: none), as one array."""
        slot_map = np.array([self._slot_of.get(key, -1) for key in other.slots], dtype=np.int64)
        slots = slot_map[other.slot] if len(other.slot) else np.zeros(0, dtype=np.int64)
        if not len(self._sorted):
            return np.full(len(slots), -1)
        packed = _packed(other.env.astype(np.int64), np.maximum(slots, 0), len(self.slots))  # both: the site's envs
        at = np.minimum(np.searchsorted(self._sorted, packed), len(self._sorted) - 1)
        return np.where((slots >= 0) & (self._sorted[at] == packed), self._order[at], -1)

    def find_env(self, env_id: str) -> int:
        """The env's position in `envs` (KeyError where the site has no such env)."""
        return self._env_of[env_id]

    def key(self, i: int) -> CellKey:
        return (self.envs[self.env[i]].id, *self.slots[self.slot[i]])

    def interval(self, i: int) -> stats.Interval:
        return _interval(self.intervals[i].tolist())

    def cell(self, i: int) -> CellData:
        counts = None
        if self.counts is not None and not math.isnan(self.counts[i, 0]):
            counts = _interval(self.counts[i].tolist())
        return CellData(self.interval(i), self.samples.get(i), int(self.number[i]),
                        self.benchmarks[self.benchmark[i]], int(self.index[i]), counts)

    def positions(self, env_ids: Iterable[str] | None = None) -> np.ndarray:
        """The cells of these envs (all where None), in the order they came."""
        if env_ids is None:
            return np.arange(len(self.env))
        chosen = [self._env_of[e] for e in env_ids if e in self._env_of]
        return np.flatnonzero(np.isin(self.env, chosen))

    def items(self, env_ids: Iterable[str] | None = None) -> Iterator[tuple[CellKey, CellData]]:
        return ((self.key(i), self.cell(i)) for i in self.positions(env_ids).tolist())

    def __getitem__(self, key: CellKey) -> CellData:
        i = self.find(key)
        if i is None:
            raise KeyError(key)
        return self.cell(i)

    def __iter__(self) -> Iterator[CellKey]:
        return (self.key(i) for i in range(len(self.env)))

    def __len__(self) -> int:
        return len(self.env)


class _CellsBuilder:
    """Collects the site's cells a result file at a time into compact buffers (no object per cell, and no
    per-file arrays kept), then makes each label's Cells as views of them. A file's cells are placed by one
    lookup of its layout (the same in every file of a history), not one per cell."""

    def __init__(self):
        self.keys: dict[CellKind, int] = {}  # every distinct cell kind, in the order they first came
        self._layouts: dict[tuple, np.ndarray] = {}  # a file's kinds -> their ids
        self.kind, self.env, self.number = array("q"), array("q"), array("q")
        self.index, self.processes, self.values, self.spread = array("i"), array("i"), array("d"), array("d")
        self.kept: dict[int, np.ndarray] = {}  # cell -> its samples, for the files a table opens on

    def add(self, env: int, f: "FileCells", keep_samples: bool) -> None:
        ids = self._layouts.get(f.kinds)
        if ids is None:
            ids = self._layouts[f.kinds] = np.array([self.keys.setdefault(k, len(self.keys)) for k in f.kinds],
                                                    dtype=np.int64)
        at = len(self.kind)
        self.kind.frombytes(ids.tobytes())
        self.env.frombytes(np.full(len(ids), env, dtype=np.int64).tobytes())
        self.values.frombytes(np.ascontiguousarray(f.intervals, dtype=np.float64).tobytes())
        self.spread.frombytes(np.ascontiguousarray(f.spread, dtype=np.float64).tobytes())
        self.number.frombytes(f.number.astype(np.int64, copy=False).tobytes())
        self.index.frombytes(f.index.astype(np.int32, copy=False).tobytes())
        self.processes.frombytes(f.processes.astype(np.int32, copy=False).tobytes())
        if keep_samples:
            for i, (lo, hi) in enumerate(zip(f.offsets[:-1].tolist(), f.offsets[1:].tolist())):
                self.kept[at + i] = f.samples[lo:hi]

    def build(self, envs: list["EnvInfo"], env_of: dict[str, int]) -> dict[tuple[str, str], Cells]:
        """Each (label, unit kind) group's Cells. The columns are put in group order once, so that a group's are
        views of them rather than copies (a site of 400,000 cells would otherwise hold them twice)."""
        kinds = list(self.keys)
        if not len(self.kind):
            return {}
        group_of: dict[tuple[str, str], int] = {}  # (label, unit kind) -> group id, in the order kinds first came
        kind_group = np.array([group_of.setdefault((k.label, k.unit), len(group_of)) for k in kinds],
                              dtype=np.int64)
        cell_group = kind_group[np.frombuffer(self.kind, dtype=np.int64)]
        order = np.argsort(cell_group, kind="stable")
        bounds = np.searchsorted(cell_group[order], np.arange(len(group_of) + 1))
        del cell_group
        where = np.empty(len(order), dtype=np.int64)  # a cell's position once in group order
        where[order] = np.arange(len(order))
        columns = {}
        for name, dtype in (("kind", np.int64), ("env", np.int64), ("number", np.int64), ("index", np.int32),
                            ("processes", np.int32)):
            columns[name] = np.frombuffer(getattr(self, name), dtype=dtype)[order]
            setattr(self, name, array("q"))  # the buffer is copied in order: free it
        intervals = np.frombuffer(self.values, dtype=np.float64).reshape(-1, 5)[order]
        self.values = array("d")
        spread = np.frombuffer(self.spread, dtype=np.float64).reshape(-1, 3)[order]
        self.spread = array("d")
        kept, self.kept = self.kept, {}
        out = {}
        for (label, counts), g in group_of.items():
            lo, hi = int(bounds[g]), int(bounds[g + 1])
            kind = columns["kind"][lo:hi]
            # slots (threads, row name, column) and benchmarks in the order they first came (kind ids are)
            slots: dict[tuple, int] = {}
            benchmarks: dict[str, int] = {}
            slot_of_kind = np.zeros(len(kinds), dtype=np.int64)
            bench_of_kind = np.zeros(len(kinds), dtype=np.int64)
            for k in np.unique(kind).tolist():
                c = kinds[k]
                slot_of_kind[k] = slots.setdefault((c.threads, c.name, c.description), len(slots))
                bench_of_kind[k] = benchmarks.setdefault(c.benchmark, len(benchmarks))
            slot, env = slot_of_kind[kind], columns["env"][lo:hi]
            packed = _packed(env, slot, len(slots))
            unique_last = len(packed) - 1 - np.unique(packed[::-1], return_index=True)[1]
            keep = slice(None)
            if len(unique_last) < len(packed):  # a cell given twice: the last one counts, as a dict's would
                keep = np.sort(unique_last)
            # a kept cell's samples, under its position among the group's kept cells
            position = None if isinstance(keep, slice) else {p: i for i, p in enumerate(keep.tolist())}
            samples = {}
            for c, s in kept.items():
                p = int(where[c]) - lo
                if 0 <= p < hi - lo and (position is None or p in position):
                    samples[p if position is None else position[p]] = s
            out[label, counts] = Cells(envs, env_of, env[keep].astype(np.int32), list(slots),
                                       slot[keep].astype(np.int32), intervals[lo:hi][keep],
                                       columns["number"][lo:hi][keep], list(benchmarks),
                                       bench_of_kind[kind[keep]].astype(np.int32), columns["index"][lo:hi][keep],
                                       columns["processes"][lo:hi][keep], samples, spread[lo:hi][keep])
        return out


class Change(NamedTuple):
    """A cell's colour (stats.page_changes): +1 slower, -1 faster, 0 none; why; Welch's p (nan: not tested)."""

    direction: int
    reason: str
    p: float


class ViewChanges(NamedTuple):
    cells: dict[CellKey, Change]  # the view's non-baseline cells
    common: dict[str, float]  # env id -> the shift its cells share, as a ratio (stats.page_changes)

    def of(self, key: CellKey) -> Change:
        return self.cells.get(key, Change(0, "", math.nan))


def steps_by_row(steps: Sequence[dict], envs: Sequence[EnvInfo]) -> dict[tuple[str, str, int], list[tuple]]:
    """The steps of a page's rows by (env group, benchmark, index): (position of the first commit at the new
    level, confirmed?, ratio) each; refuted steps are none."""
    position = {e.commit: e.position for e in envs}
    out: dict[tuple[str, str, int], list[tuple]] = {}
    for st in steps:
        at = position.get(st.get("after"))
        if at is None or st.get("status") == REFUTED:
            continue
        group = f"{st['machine']}.{_env_hash(st['env_name'])}"
        out.setdefault((group, st["benchmark"], int(st["index"])), []).append(
            (at, st["status"] == CONFIRMED, float(st["ratio"])))
    return out


def steps_between(found: Iterable[tuple], base_position: int, head_position: int) -> tuple[float, bool]:
    """The net ratio of the confirmed steps between a baseline commit and a cell's (inverted where the cell
    comes first), and whether an unconfirmed one lies between: a step at position p lies between when the
    later of the two is at or after p and the earlier before it. compare.js `stepsBetween` does the same."""
    low, high = sorted((base_position, head_position))
    ratio, candidate = 1.0, False
    for at, confirmed, r in found:
        if low < at <= high:
            if confirmed:
                ratio *= r
            else:
                candidate = True
    return (ratio if head_position >= base_position else 1 / ratio), candidate


@dataclass
class ComparePage:
    label: str
    slug: str
    unit_kind: str  # TIME_UNIT, COUNT_UNIT or a benchmark's own unit (unit_kind)
    envs: list[EnvInfo]  # every env with data for this label, in history order
    cells: Cells
    columns: list[str | None]
    default_envs: list[str] = field(default_factory=list)

    def table(self, env_ids: list[str]) -> TableView:
        """The Compare table of these envs (rows in history order), as torchbench_core lays it out."""
        compare = Compare(c.measurement(self.label, key) for key, c in self.cells.items(env_ids))
        if self.unit_kind != TIME_UNIT:
            compare.as_counts(self.unit_kind)
        view = compare.tables()[0]
        order = {e.id: e.position for e in self.envs}
        rows = sorted(view.rows, key=lambda r: (r.num_threads, order[r.env]))
        footer = view.footer if self.unit_kind == TIME_UNIT else fixed_unit_footer(self.unit_kind)
        return TableView(view.label, view.columns, tuple(rows), view.unit, footer)

    def baselines(self, env_ids: list[str]) -> dict[str, str]:
        """Per env group, the oldest chosen env: what the other cells are coloured against."""
        out: dict[str, str] = {}
        for env in sorted((e for e in self.envs if e.id in set(env_ids)), key=lambda e: e.position):
            out.setdefault(env.group, env.id)
        return out

    def changes(self, env_ids: list[str], baselines: dict[str, str], steps: Sequence[dict] = ()) -> "ViewChanges":
        """stats.page_changes for a view: every chosen non-baseline cell against its baseline cell, compared
        together (one false-discovery control over the view), with the steps between them."""
        c = self.cells
        by_row = steps_by_row(steps, self.envs)
        heads, bases = [], []
        for i in c.positions(env_ids).tolist():
            env = c.envs[c.env[i]]
            base = baselines.get(env.group)
            j = None if base is None or base == env.id else c.find((base, *c.slots[c.slot[i]]))
            if j is not None:
                heads.append(i)
                bases.append(j)
        step_ratio, candidate = np.ones(len(heads)), np.zeros(len(heads), dtype=bool)
        for k, (i, j) in enumerate(zip(heads, bases)):
            env = c.envs[c.env[i]]
            found = by_row.get((env.group, c.benchmarks[c.benchmark[i]], int(c.index[i])))
            if found:
                step_ratio[k], candidate[k] = steps_between(found, c.envs[c.env[j]].position, env.position)
        h, b = np.array(heads, dtype=np.int64), np.array(bases, dtype=np.int64)
        found = stats.page_changes(c.intervals[b, 4], c.intervals[h, 4], c.spread[b], c.spread[h], c.env[h],
                                   step_ratio, candidate)
        cells = {c.key(i): Change(int(d), r, float(p)) for i, d, r, p in
                 zip(heads, found.direction.tolist(), found.reason, found.p.tolist())}
        common = {c.envs[e].id: float(r) for e, r in zip(c.env[h].tolist(), found.common.tolist())}
        return ViewChanges(cells, common)

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

    def data(self, steps: Sequence[dict] = ()) -> dict:
        """What the page's script needs to re-lay the table for other commits and baselines."""
        c = self.cells
        scale_unit, scale = display_unit(self.unit_kind, float(c.intervals[:, 0].min()))
        keys = [f"{threads}|{name}|{'' if column is None else column}" for threads, name, column in c.slots]
        ids = [e.id for e in c.envs]
        cells: dict[str, dict[str, list]] = {}
        counts: dict[str, dict[str, float]] = {}  # instructions per call beside the times, where counted
        # a cell: [median, low, high, blocks, level, processes with a level, their log mean, log variance]
        values = np.column_stack([c.intervals, c.spread])
        shown = np.where(np.isnan(values), None, values).tolist()  # JSON: null, not NaN
        for env, slot, cell in zip(c.env.tolist(), c.slot.tolist(), shown):
            cell[3], cell[5] = int(cell[3]), int(cell[5] or 0)
            cells.setdefault(ids[env], {})[keys[slot]] = cell
        # the steps of each row (stats.page_changes' STEP and CANDIDATE), under the env group and row key
        by_row = steps_by_row(steps, self.envs)
        step_data: dict[str, dict[str, list]] = {}
        if by_row:
            for env, slot, b, index in zip(c.env.tolist(), c.slot.tolist(), c.benchmark.tolist(), c.index.tolist()):
                group = c.envs[env].group
                found = by_row.get((group, c.benchmarks[b], index))
                if found:
                    step_data.setdefault(group, {})[keys[slot]] = [[at, int(ok), r] for at, ok, r in found]
        if c.counts is not None:
            for env, slot, median in zip(c.env.tolist(), c.slot.tolist(), c.counts[:, 0].tolist()):
                if not math.isnan(median):
                    counts.setdefault(ids[env], {})[keys[slot]] = median
        # Compare's row order: by thread count, then as the results came (a site of 2000
        # commits would pay for a whole Compare per page to learn just this).
        first = np.unique(c.slot, return_index=True)[1]
        rows = sorted(dict.fromkeys(c.slots[c.slot[i]][:2] for i in np.sort(first).tolist()), key=lambda r: r[0])
        return {"label": self.label, "unit": scale_unit, "scale": scale,
                "fixed": None if self.unit_kind == TIME_UNIT else [self.unit_kind, fixed_unit_footer(self.unit_kind)],
                "units": {str(k): [name, s, unit_to_english(name)] for k, (name, s) in _UNITS.items()},
                "rows": [[t, name, slug(name)] for t, name in rows],
                "columns": ["" if c is None else c for c in self.columns], "floor": stats.PAGE_FLOOR,
                "confidence": stats.PAGE_CONFIDENCE, "q": stats.PAGE_Q, "common_min": stats.COMMON_MIN_CELLS,
                "steps": step_data,
                "envs": [{"id": e.id, "group": e.group, "machine": e.machine, "env": e.env_name,
                          "tag": self.tag(e),
                          "commit": e.commit, "short": e.short, "subject": e.subject, "pos": e.position}
                         for e in self.envs],
                "default": self.default_envs, "cells": cells, "instructions": counts, "counts_title": COUNTS_TITLE}


@dataclass(frozen=True, slots=True)
class Point:
    env: EnvInfo
    interval: stats.Interval
    benchmark: str
    index: int
    spread: tuple[float, float, float] = (0.0, math.nan, math.nan)  # its per-process levels (stats.spread_columns)


class Points(Sequence):
    """A series' points in history order, made as they are asked for (`points[-40:]` makes 40)."""

    def __init__(self, cells: Cells, at: np.ndarray):
        self.cells, self.at = cells, at

    def __len__(self) -> int:
        return len(self.at)

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self._point(i) for i in self.at[k].tolist()]
        return self._point(int(self.at[k]))

    def __iter__(self) -> Iterator[Point]:
        return (self._point(i) for i in self.at.tolist())

    def _point(self, i: int) -> Point:
        c = self.cells
        return Point(c.envs[c.env[i]], c.interval(i), c.benchmarks[c.benchmark[i]], int(c.index[i]),
                     tuple(c.spread[i].tolist()))


@dataclass
class Series:
    name: str  # the row (sub_label)
    column: str | None  # the description
    threads: int
    group: str  # EnvInfo.group: a history is drawn per machine and environment
    group_label: str  # machine · environment, for the legend where a page has several groups
    cells: Cells
    at: np.ndarray  # its cells, in history order
    baseline: "Series | None" = None  # the overhead baseline's series on the same column, threads and group

    @property
    def points(self) -> Points:
        return Points(self.cells, self.at)

    def envs(self) -> list[EnvInfo]:
        return [self.cells.envs[e] for e in self.cells.env[self.at].tolist()]

    def values(self, field: str) -> np.ndarray:
        """One of stats.Interval's fields (median, low, high, n, level) of every point, in history order."""
        return self.cells.intervals[self.at, _INTERVAL_FIELDS.index(field)]

    @property
    def overhead(self) -> list[tuple[EnvInfo, float, float, float]] | None:
        """(env, ns, low ns, high ns) over the baseline case, on each commit both measured; None without one."""
        if self.baseline is None:
            return None
        base = self.baseline
        mine, theirs = self.cells.env[self.at], base.cells.env[base.at]
        common, i, j = np.intersect1d(mine, theirs, assume_unique=True, return_indices=True)
        order = np.argsort(i, kind="stable")  # in this series' history order
        a, b = self.cells.intervals[self.at[i[order]]], base.cells.intervals[base.at[j[order]]]
        ns = (a[:, 0] - b[:, 0]) * 1e9
        low = (a[:, 1] - b[:, 2]) * 1e9  # the conservative band: the extremes of the two intervals (nan stays nan)
        high = (a[:, 2] - b[:, 1]) * 1e9
        envs = self.cells.envs
        return [(envs[e], x, lo, hi) for e, x, lo, hi in zip(common[order].tolist(), ns.tolist(), low.tolist(),
                                                              high.tolist())]


_INTERVAL_FIELDS = ("median", "low", "high", "n", "level")


@dataclass
class SeriesPage:
    label: str
    slug: str
    unit_kind: str
    series: list[Series]
    overhead_baseline: str | None  # sub_label the overhead is measured against, when the label has it
    envs: list[EnvInfo] = field(default_factory=list)  # the label's envs, in history order


class CellKind(NamedTuple):
    """Where a measured row goes: its label's page, its row and column there, and its benchmark."""

    label: str
    threads: int
    name: str  # sub_label
    description: str | None
    unit: str  # TIME_UNIT for times (asv's "seconds"), else asv's unit: COUNT_UNIT, "bytes", a ratio...
    benchmark: str


class FileCells(NamedTuple):
    """What the pages keep of one result file's measured rows, as columns: made once per file (and kept
    between publishes by page_cache, so that an unchanged file is not read again), pickled as a few
    arrays and added to the site a file at a time."""

    machine: str
    commit: str
    env_name: str
    date: int
    kinds: tuple[CellKind, ...]  # per cell
    intervals: np.ndarray  # (cells, 5): stats.Interval's fields
    samples: np.ndarray  # every cell's per-call samples, one after another
    offsets: np.ndarray  # cell i's samples are samples[offsets[i]:offsets[i + 1]]
    number: np.ndarray
    index: np.ndarray  # the parameter combination's position in asv's order
    processes: np.ndarray  # that measured each cell (asv rounds); 0 where nobody counted them
    spread: np.ndarray  # (cells, 3): each cell's per-process levels, as stats.spread_columns gives them

    @property
    def cells(self) -> int:
        return len(self.kinds)


def file_cells(m: Measured) -> FileCells:
    """A file's measured cells (results.Measured, its samples packed or not) as the pages keep them."""
    kinds = tuple(CellKind(label, threads, name, description, unit_kind(unit), benchmark)
                  for benchmark, (label, name, description, threads), unit in
                  zip(m.benchmark, map(placement, m.benchmark, m.params), m.unit))
    flat, offsets = m.packed().samples
    return FileCells(m.machine, m.commit, m.env_name, m.date or 0, kinds, stats.interval_columns(flat, offsets),
                     flat, offsets, np.array(m.number, dtype=np.int64), np.array(m.index, dtype=np.int32),
                     np.array(m.processes, dtype=np.int32), stats.spread_columns(m.levels))


def records(rows: Iterable[Row]) -> Iterator[FileCells]:
    """The measured rows (failed and skipped ones have no cell) as the pages need them: one FileCells per
    commit and environment on a machine, in the order they first come."""
    for m in measured_of(rows):
        if m.benchmark:
            yield file_cells(m)


class _EnvKey(NamedTuple):
    machine: str
    commit: str
    env_name: str


def env_id_of(row: "Row | FileCells | _EnvKey") -> str:
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


def build_from(found: Iterable[FileCells], revisions: dict[str, int],
               subjects: dict[str, str] | Callable[[set[str]], dict[str, str]],
               default_commits: int = DEFAULT_COMMITS) -> tuple[list[ComparePage], list[SeriesPage]]:
    """build, from records."""
    env_index: dict[_EnvKey, int] = {}  # an env's place (not its file: the builder has the cells) -> in `envs`
    dates: dict[str, float] = {}
    builder = _CellsBuilder()
    # The default tables show the last commits: the branch's newest, and any commit off it (those
    # come after the branch). Only their cells keep their samples; the rest keep their interval.
    recent = set(sorted(revisions, key=revisions.get)[-default_commits:])
    for f in found:
        if not f.cells:
            continue
        where = _EnvKey(f.machine, f.commit, f.env_name)
        env = env_index.get(where)
        if env is None:
            env = env_index[where] = len(env_index)
            dates[f.commit] = min(dates.get(f.commit, math.inf), f.date)
        builder.add(env, f, f.commit in recent or f.commit not in revisions)
    positions = _positions(dates, revisions)
    if callable(subjects):
        subjects = subjects(set(dates))
    envs = [EnvInfo(env_id_of(r), r.machine, r.env_name, r.commit, positions[r.commit], subjects.get(r.commit, ""))
            for r in env_index]
    env_of = {e.id: i for i, e in enumerate(envs)}
    groups = builder.build(envs, env_of)
    by_label = {label: cells for (label, unit), cells in groups.items() if unit == TIME_UNIT}
    # a label whose rows come in two units (seconds and a ratio, say) has a page per unit, apart by name
    shared = {label for label, n in collections.Counter(label for label, _ in groups).items() if n > 1}
    kinds = {label: TIME_UNIT for label in by_label}
    for (label, unit), cells in groups.items():
        if unit == TIME_UNIT:
            continue
        if unit == COUNT_UNIT and label in by_label:  # counts of timed cases: shown beside their times
            timed_cells = by_label[label]
            at = timed_cells.find_all(cells)
            timed_cells.counts = np.full_like(timed_cells.intervals, math.nan)
            timed_cells.counts[at[at >= 0]] = cells.intervals[at >= 0]
        else:  # a label of counts alone, or values in a unit of their own: its own page, in that unit
            page_label = f"{label} ({unit})" if label in shared else label
            by_label[page_label], kinds[page_label] = cells, unit

    position = np.array([e.position for e in envs], dtype=np.int64)
    compare_pages, series_pages = [], []
    for label in sorted(by_label):
        cells = by_label[label]
        label_envs = sorted((envs[e] for e in np.unique(cells.env).tolist()), key=lambda e: (e.position, e.id))
        # columns in the order they first appear, by commit then thread count
        threads = np.array([t for t, _, _ in cells.slots], dtype=np.int64)[cells.slot]
        first = np.lexsort((threads, position[cells.env]))
        columns = list(dict.fromkeys(cells.slots[k][2] for k in cells.slot[first].tolist()))
        page = ComparePage(label, slug(label), kinds[label], label_envs, cells, columns)
        last = sorted({e.position for e in label_envs})[-default_commits:]
        page.default_envs = [e.id for e in label_envs if e.position in last]
        compare_pages.append(page)
        series_pages.append(_series_page(page, position))
    return compare_pages, series_pages


def _series_page(page: ComparePage, position: np.ndarray) -> SeriesPage:
    """One series per (threads, row, column) and env group, its cells in history order."""
    cells = page.cells
    groups = [e.group for e in cells.envs]
    by_key: dict[tuple, list[int]] = {}
    for i, (env, slot) in enumerate(zip(cells.env.tolist(), cells.slot.tolist())):
        by_key.setdefault((slot, groups[env]), []).append(i)
    series = []
    for slot, group in sorted(by_key, key=lambda k: (cells.slots[k[0]][0], str(cells.slots[k[0]][2]),
                                                     cells.slots[k[0]][1], k[1])):
        threads, name, column = cells.slots[slot]
        at = np.array(by_key[slot, group], dtype=np.int64)
        at = at[np.argsort(position[cells.env[at]], kind="stable")]  # a group's envs: one per commit
        first = cells.envs[cells.env[at[0]]]
        series.append(Series(name, column, threads, group, f"{first.machine} · {first.env_short}", cells, at))
    names = {s.name for s in series}
    baseline = (OVERHEAD_BASELINE if OVERHEAD_BASELINE in names and len(names) > 1 and page.unit_kind == TIME_UNIT
                else None)
    if baseline:
        baselines = {(b.column, b.threads, b.group): b for b in series if b.name == baseline}
        for s in series:
            s.baseline = baselines.get((s.column, s.threads, s.group)) if s.name != baseline else None
    return SeriesPage(page.label, page.slug, page.unit_kind, series, baseline, page.envs)
