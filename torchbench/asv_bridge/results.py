"""asv result files -> rows and torchbench_core Measurements.

Read through asv's own API (`asv.results.Results.load`), one file at a
time: a malformed or foreign file is named in a warning and skipped, and
every other file is still used. A row's env is the asv environment name and
commit (`env_name@hash8`), as the suites' Timers name it.

Each benchmark's asv parameters are the task-spec fields (label, sub_label,
description, num_threads; see torchbench_core.asv_suite), so a row becomes a
Measurement with its TaskSpec. Suites with other parameters still load:
label = benchmark name, sub_label = the parameter values.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator, NamedTuple, Sequence

import numpy as np

from torchbench_core import Measurement, TaskSpec
from torchbench_core.asv_suite import TASK_SPEC_PARAMS

from .. import stats
from .plugin import OUTCOME_SCHEMA, outcome_path

__all__ = ["COUNTS_OF", "COUNT_UNIT", "Definitions", "Outcome", "ResultFile", "ResultSet", "Row", "counts_row_name",
           "iter_files", "iter_rows", "load", "load_paths", "loaded_file", "Measured", "measured_of", "PackedSamples",
           "param_value", "placement", "timed_benchmark"]

COUNT_UNIT = "instructions"  # asv's unit of a row of instruction counts (a CountsSuite's, or one made here)
# The row of a plain asv time_ benchmark's instruction counts in a history (history/counts.py records them in
# the outcome record): the benchmark's name and this, which no asv benchmark name can hold (":" is not in a
# Python name). It is placed where its benchmark's times are, so the pages show the counts beside them, and
# `find` sees its steps as a series of its own.
COUNTS_OF = ":instructions"


def counts_row_name(benchmark: str) -> str:
    """The name of the row of `benchmark`'s instruction counts."""
    return benchmark + COUNTS_OF


def timed_benchmark(name: str) -> str:
    """The benchmark a row measures: `name` itself, or the timed benchmark of a row of its counts."""
    return name[:-len(COUNTS_OF)] if name.endswith(COUNTS_OF) else name


@functools.lru_cache(maxsize=65536)  # a history repeats the same few parameter values in every file
class Unparsed(str):
    """A parameter value that is no literal (asv's repr of a function or a class, "<function f>"): the text,
    whose repr is the text itself, so that a row is named as asv names it: benchmark(True, <function f>)."""

    def __repr__(self) -> str:
        return str.__str__(self)


def param_value(text):
    """asv keeps parameter values as repr strings; the value itself where it is a literal, else Unparsed."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError):
        return Unparsed(text)


@dataclass(frozen=True)
class Row:
    """One benchmark and parameter combination, measured on one commit in one environment."""

    machine: str
    commit: str
    env_name: str
    benchmark: str
    index: int  # the parameter combination's position in asv's itertools.product order
    params: tuple[tuple[str, object], ...]  # (name, value) in asv's order
    value: float | None  # None: failed; nan: skipped (asv's convention)
    samples: tuple[float, ...] | None
    number: int | None
    stats: dict | None
    unit: str | None
    date: int | None
    processes: int | None = None  # the processes (asv rounds) that measured it, where our plugin counted them
    levels: tuple[float, ...] | None = None  # each process's level (stats.level of its blocks), where our plugin kept them
    started_at: int | None = None  # when asv began measuring it (ms since the epoch, asv's started_at)

    @property
    def status(self) -> str:
        if self.value is None:
            return "failed"
        if isinstance(self.value, float) and math.isnan(self.value):
            return "skipped"
        return "ok"

    @property
    def env(self) -> str:
        return f"{self.env_name}@{self.commit[:8]}"

    @property
    def name(self) -> str:
        """asv's way of naming a parameterised row: name(value, value, ...)."""
        if not self.params:
            return self.benchmark
        return f"{self.benchmark}({', '.join(repr(v) for _, v in self.params)})"

    def placement(self) -> tuple[str, str, str | None, int]:
        """(label, sub_label, description, num_threads): where Compare puts the row."""
        return placement(self.benchmark, self.params)

    def task_spec(self) -> TaskSpec:
        label, sub_label, description, threads = self.placement()
        return TaskSpec(stmt=self.benchmark, setup="pass", label=label, sub_label=sub_label,
                        description=description, env=self.env, num_threads=threads)

    def measurement(self) -> Measurement | None:
        """The row as a Measurement (raw samples when asv recorded them); None unless status is ok, and None for a
        row in another unit than seconds (instruction counts, a track_'s own unit): a Measurement is a time."""
        if self.status != "ok" or (self.unit or "seconds") != "seconds":
            return None
        number = self.number or 1
        per_call = self.samples if self.samples else (self.value,)
        return Measurement(number, [s * number for s in per_call], self.task_spec())


@dataclass(frozen=True)
class Outcome:
    """What our asv plugin (plugin.py) recorded for one results file: the build, why benchmarks failed, and
    why combinations were skipped."""

    build: dict | None  # {"built": bool, "log": str}, or None where nothing was built (existing env)
    failures: dict[str, dict]  # benchmark name -> {"errcode": int, "stderr": str}
    processes: dict[str, int] = field(default_factory=dict)  # benchmark name -> processes that measured it
    levels: dict[str, list[list[float]]] = field(default_factory=dict)  # name -> per combination, each process's level
    # a plain time_ benchmark's instruction counts per call (history/counts.py): name -> combination -> repeats
    counts: dict[str, dict[int, list[float]]] = field(default_factory=dict)
    uncounted: dict[str, dict[int, str]] = field(default_factory=dict)  # name -> combination -> why not counted
    # name -> combination -> why it was skipped ("skipped here: no CUDA device", asv's skip by its setup)
    skipped: dict[str, dict[int, str]] = field(default_factory=dict)

    def levels_of(self, name: str, index: int) -> tuple[float, ...] | None:
        found = self.levels.get(name)
        return tuple(found[index]) if found is not None and index < len(found) else None

    @property
    def built(self) -> bool | None:
        return None if self.build is None else bool(self.build.get("built"))


@dataclass
class ResultSet:
    rows: list[Row] = field(default_factory=list)
    outcomes: dict[tuple[str, str, str], Outcome] = field(default_factory=dict)  # (machine, commit, env)
    durations: dict[tuple[str, str, str], dict[str, float]] = field(default_factory=dict)  # asv's, per file
    warnings: list[str] = field(default_factory=list)
    benchmarks: dict[str, dict] = field(default_factory=dict)  # benchmarks.json
    files: list[tuple[str, object]] = field(default_factory=list)  # (machine, asv.results.Results) read

    def for_commit(self, commit: str) -> list[Row]:
        return [r for r in self.rows if r.commit == commit]

    def measurements(self) -> list[Measurement]:
        return [m for m in (r.measurement() for r in self.rows) if m is not None]


def _load_benchmarks(results_dir: Path, warnings: list[str]) -> dict[str, dict]:
    from asv import util
    from asv.benchmarks import Benchmarks

    path = results_dir / "benchmarks.json"
    if not path.exists():
        return {}
    try:
        return util.load_json(str(path), api_version=Benchmarks.api_version)
    except (util.UserError, ValueError, OSError) as e:
        warnings.append(f"{path}: skipped, not a readable asv benchmarks file ({e})")
        return {}


@functools.lru_cache(maxsize=65536)  # a history's rows repeat the same few placements in every file
def _placement(benchmark: str, params: tuple[tuple[str, object], ...]) -> tuple[str, str, str | None, int]:
    found = dict(params)
    benchmark = timed_benchmark(benchmark)  # a row of counts goes where its benchmark's times go
    if set(TASK_SPEC_PARAMS) <= found.keys():
        return (str(found["label"]), str(found["sub_label"]), str(found["description"]), int(found["num_threads"]))
    return benchmark, ", ".join(f"{k}={v!r}" for k, v in params) or benchmark, None, 1


@functools.lru_cache(maxsize=1024)  # every file of a history has the same parameters: made once, not per file
def _combinations(names: tuple[str, ...], params: tuple[tuple[str, ...], ...]) -> list[tuple[tuple[str, object], ...]]:
    """Each parameter combination as (name, value) pairs, in asv's itertools.product order."""
    return [tuple((n, param_value(v)) for n, v in zip(names, combo)) for combo in itertools.product(*params)]


def _benchmarks_of(results, benchmarks: dict[str, dict]) -> Iterator[tuple[str, dict, zip]]:
    """Each benchmark of a file, sorted: its name, its definition, and its cells as (parameter combination,
    value, stats, samples) in asv's order (what _rows and _measured both read)."""
    for key in sorted(results.get_all_result_keys()):
        params = results.get_result_params(key) or []
        info = benchmarks.get(key, {})
        names = info.get("param_names") or [f"param{i + 1}" for i in range(len(params))]
        values, stats, samples = (get(key, params) for get in (
            results.get_result_value, results.get_result_stats, results.get_result_samples))
        yield key, info, zip(_combinations(tuple(names), tuple(tuple(p) for p in params)), values, stats, samples)


def _rows(results, machine: str, benchmarks: dict[str, dict], outcome: Outcome | None) -> list[Row]:
    rows = []
    outcome = outcome or Outcome(None, {})
    for key, info, cells in _benchmarks_of(results, benchmarks):
        combos = []
        for index, (combo, value, stat, sample) in enumerate(cells):
            number = stat.get("number") if stat else None
            combos.append(combo)
            rows.append(Row(
                machine=machine, commit=results.commit_hash, env_name=results.env_name, benchmark=key, index=index,
                params=combo, value=value,
                samples=tuple(sample) if sample else None,
                number=int(number) if number else None, stats=stat or None, unit=info.get("unit"),
                date=results.date, processes=outcome.processes.get(key), levels=outcome.levels_of(key, index),
                started_at=results.started_at.get(key)))
        for index, counts in _counts_cells(outcome, key, len(combos)):
            rows.append(Row(machine=machine, commit=results.commit_hash, env_name=results.env_name,
                            benchmark=counts_row_name(key), index=index, params=combos[index],
                            value=float(np.median(counts)), samples=tuple(counts), number=1, stats=None,
                            unit=COUNT_UNIT, date=results.date, processes=1, started_at=results.started_at.get(key)))
    return rows


def _counts_cells(outcome: Outcome, key: str, combinations: int) -> list[tuple[int, list[float]]]:
    """(combination, counts per call) of benchmark `key`'s counts in the outcome record, for the combinations
    its results file has (one valgrind process: processes 1)."""
    return sorted((i, c) for i, c in outcome.counts.get(key, {}).items() if 0 <= i < combinations and c)


class PackedSamples(NamedTuple):
    """Every cell's samples one after another: cell i's are flat[offsets[i]:offsets[i + 1]]."""

    flat: np.ndarray
    offsets: np.ndarray


class Measured(NamedTuple):
    """The measured cells of one result file (status ok), as plain lists, a file at a time: what the pages
    read (publish/pages.py: file_cells), without a Row object per cell."""

    machine: str
    commit: str
    env_name: str
    date: int | None
    benchmark: list[str]
    index: list[int]
    params: list[tuple[tuple[str, object], ...]]
    unit: list[str | None]
    samples: list[Sequence[float]] | PackedSamples  # per call; (value,) where asv kept no samples
    number: list[int]
    processes: list[int]
    levels: list[Sequence[float]]  # each process's level ((): not kept)

    def packed(self) -> "Measured":
        """The same cells with their samples as one array and its offsets (PackedSamples): a few arrays to
        pickle, not a float object per sample (what publish/ hands a forked helper per file)."""
        if isinstance(self.samples, PackedSamples):
            return self
        return self._replace(samples=PackedSamples(*stats.pack_samples(self.samples)))

    def add(self, benchmark: str, index: int, params: tuple, unit: str | None, samples: Sequence[float] | None,
            value: float, number: int | None, processes: int | None, levels: Sequence[float] | None) -> None:
        """One measured cell; (value,) stands for samples asv did not keep, 1 for an unknown number."""
        self.benchmark.append(benchmark)
        self.index.append(index)
        self.params.append(params)
        self.unit.append(unit)
        self.samples.append(samples or (value,))
        self.number.append(int(number) if number else 1)
        self.processes.append(processes or 0)
        self.levels.append(levels or ())


def _measured(results, machine: str, benchmarks: dict[str, dict], outcome: Outcome | None) -> Measured:
    """`_rows`' cells whose status is ok, as columns (the same values, in the same order)."""
    outcome = outcome or Outcome(None, {})
    out = Measured(machine, results.commit_hash, results.env_name, results.date, [], [], [], [], [], [], [], [])
    for key, info, cells in _benchmarks_of(results, benchmarks):
        combos = []
        for index, (combo, value, stat, sample) in enumerate(cells):
            combos.append(combo)
            if value is None or (isinstance(value, float) and math.isnan(value)):  # failed, skipped
                continue
            out.add(key, index, combo, info.get("unit"), sample, value, stat.get("number") if stat else None,
                    outcome.processes.get(key), outcome.levels_of(key, index))
        for index, counts in _counts_cells(outcome, key, len(combos)):
            out.add(counts_row_name(key), index, combos[index], COUNT_UNIT, counts, float(np.median(counts)), 1, 1,
                    None)
    return out


def measured_of(rows: Iterable[Row]) -> Iterator[Measured]:
    """Rows (of any files) as Measured, one per (machine, commit, env) in the order they first come; rows
    whose status is not ok are left out, as `_measured` leaves them."""
    files: dict[tuple[str, str, str], Measured] = {}
    for row in rows:
        if row.status != "ok":
            continue
        key = (row.machine, row.commit, row.env_name)
        m = files.get(key)
        if m is None:
            m = files[key] = Measured(*key, row.date, [], [], [], [], [], [], [], [])
        m.add(row.benchmark, row.index, row.params, row.unit, row.samples, row.value, row.number, row.processes,
              row.levels)
    yield from files.values()


def placement(benchmark: str, params: tuple[tuple[str, object], ...]) -> tuple[str, str, str | None, int]:
    """(label, sub_label, description, num_threads): where Compare puts a row (Row.placement)."""
    try:
        return _placement(benchmark, params)
    except TypeError:  # a parameter value that is not hashable (a list): placed without the cache
        return _placement.__wrapped__(benchmark, params)


def _load_outcome(path: Path, warnings: list[str]) -> Outcome | None:
    if not path.exists():
        return None
    try:
        doc = json.loads(path.read_text())
        if doc.get("schema") != OUTCOME_SCHEMA:
            raise ValueError(f"schema is {doc.get('schema')!r}, expected {OUTCOME_SCHEMA!r}")
        processes = {str(k): int(v) for k, v in dict(doc.get("processes", {})).items()}
        levels = {str(k): [[float(x) for x in per] for per in v] for k, v in dict(doc.get("levels", {})).items()}
        counts = {str(k): {int(i): [float(x) for x in c] for i, c in dict(v).items()}
                  for k, v in dict(doc.get("counts", {})).items()}
        uncounted, skipped = ({str(k): {int(i): str(why) for i, why in dict(v).items()}
                               for k, v in dict(doc.get(key, {})).items()} for key in ("uncounted", "skipped"))
        return Outcome(doc.get("build"), dict(doc.get("failures", {})), processes, levels, counts, uncounted,
                       skipped)
    except (ValueError, TypeError, OSError, AttributeError) as e:
        warnings.append(f"{path}: skipped, not a readable outcome record ({e})")
        return None


def _outcome_path(path: Path) -> Path:
    """Where our plugin keeps a result file's outcome record (RESULTS/MACHINE/FILE.json)."""
    return outcome_path(path.parent.parent, f"{path.parent.name}/{path.name}")


def _read(path: Path, benchmarks: dict[str, dict], warnings: list[str], loaded=None, make=None):
    """(asv Results, rows, outcome) of one file; None, with a warning naming it, when it cannot be read.
    `loaded`: the file's Results where asv has parsed it already (an asv publish: see loaded_file).
    `make`: what to make of it instead of rows (_measured)."""
    from asv import util
    from asv.results import Results

    try:
        results = loaded if loaded is not None else Results.load(str(path))
        outcome = _load_outcome(_outcome_path(path), warnings)
        made = (make or _rows)(results, path.parent.name, benchmarks, outcome)
        return results, made, outcome
    except (util.UserError, ValueError, KeyError, TypeError, IndexError, AttributeError, OSError) as e:
        warnings.append(f"{path}: skipped, not a readable asv results file ({type(e).__name__}: {e})")
        return None


class ResultFile(NamedTuple):
    """One result file, and what reads it: a caller that keeps what it made of a file (the site cache)
    reads only the files whose stamp changed."""

    path: Path
    stamp: tuple  # (size, mtime ns, digest of benchmarks.json, which names the rows' parameters, and the
    # outcome record's size and mtime, which counts the processes)
    read: Callable[[], list[Row] | None]  # None, with a warning naming the file, when it cannot be read
    measure: Callable[[], Measured | None]  # its measured cells as columns (likewise)


class Definitions(NamedTuple):
    """A results folder's benchmarks.json, read once for all its files, and its digest (part of each
    file's stamp)."""

    benchmarks: dict[str, dict]
    digest: str

    @classmethod
    def read(cls, results_dir: Path, warnings: list[str]) -> Definitions:
        definitions = results_dir / "benchmarks.json"
        digest = hashlib.sha1(definitions.read_bytes()).hexdigest() if definitions.is_file() else ""
        return cls(_load_benchmarks(results_dir, warnings), digest)


def _stamp(path: Path, digest: str) -> tuple:
    stat = path.stat()
    try:
        outcome = _outcome_path(path).stat()
        outcome_stamp = (outcome.st_size, outcome.st_mtime_ns)
    except OSError:
        outcome_stamp = None
    return (stat.st_size, stat.st_mtime_ns, digest, outcome_stamp)


def iter_files(results_dir: Path, warnings: list[str]) -> Iterator[ResultFile]:
    """Every result file under results_dir, in a stable order."""
    if not results_dir.is_dir():
        return
    definitions = Definitions.read(results_dir, warnings)
    for path in _result_files(results_dir):
        yield _result_file(path, definitions, warnings)


def loaded_file(results_dir: Path, loaded, definitions: Definitions, warnings: list[str]) -> ResultFile:
    """The ResultFile of a Results that asv has loaded already (asv's own publish parses every file, and
    our publisher takes its rows from that instead of parsing the file again)."""
    path = Path(results_dir) / loaded._filename  # asv's "machine/file.json", set by Results.load
    return _result_file(path, definitions, warnings, loaded)


def _result_file(path: Path, definitions: Definitions, warnings: list[str], loaded=None) -> ResultFile:
    def read(make=None):
        got = _read(path, definitions.benchmarks, warnings, loaded, make)
        return None if got is None else got[1]

    return ResultFile(path, _stamp(path, definitions.digest), read, functools.partial(read, make=_measured))


def iter_rows(results_dir: Path, warnings: list[str]) -> Iterator[Row]:
    """Every row of every readable result file, a file at a time (a site of 2000 commits need not hold
    all of them as rows at once); unreadable files are named in `warnings`."""
    for file in iter_files(results_dir, warnings):
        yield from file.read() or ()


def _load_file(out: ResultSet, path: Path, commits: set[str] | None) -> None:
    machine = path.parent.name
    read = _read(path, out.benchmarks, out.warnings)
    if read is None:
        return
    results, rows, outcome = read
    if commits is not None and results.commit_hash not in commits:
        return
    out.rows.extend(rows)
    out.files.append((machine, results))
    out.durations[(machine, results.commit_hash, results.env_name)] = dict(results.duration)
    if outcome is not None:
        out.outcomes[(machine, results.commit_hash, results.env_name)] = outcome


def _result_files(results_dir: Path) -> list[Path]:
    return [path for machine_dir in sorted(p for p in results_dir.iterdir() if p.is_dir())
            for path in sorted(machine_dir.glob("*.json")) if path.name != "machine.json"]


def load(results_dir: Path, *, commits: set[str] | None = None) -> ResultSet:
    """Every readable result file under `results_dir` (optionally only `commits`)."""
    out = ResultSet()
    out.benchmarks = _load_benchmarks(results_dir, out.warnings)
    if results_dir.is_dir():
        for path in _result_files(results_dir):
            _load_file(out, path, commits)
    return out


def load_paths(paths: list[Path]) -> ResultSet:
    """Result files, or results folders (RESULTS/MACHINE/*.json), given one by one."""
    out = ResultSet()
    for path in paths:
        if path.is_dir():
            root = path if (path / "benchmarks.json").exists() else path.parent
            out.benchmarks.update(_load_benchmarks(root, out.warnings))
            files = _result_files(path) if (path / "benchmarks.json").exists() else sorted(
                p for p in path.glob("*.json") if p.name != "machine.json")
        else:
            out.benchmarks.update(_load_benchmarks(path.parent.parent, out.warnings))
            files = [path]
        for file in files:
            _load_file(out, file, None)
    return out
