"""Instruction counts under valgrind's callgrind, many statements per valgrind process.

Starting Python and importing torch under valgrind costs most of a minute, and
torch.utils.benchmark pays it on every collect_callgrind call. Here a valgrind
process starts uninstrumented and switches instrumentation on at its first
count (cpp.instrumentation_switch), which cuts the start to ~15 s with the
same counts, and `collect_callgrind_many` pays that once for a whole batch
(twice, side by side on two cores, for a big one). C++ statements (Timer(language="cpp")) are compiled
together, one program for many, and counted in valgrind processes of their own
beside the Python ones. Parsing uses valgrind's own callgrind_annotate, as
torch does.
"""

from __future__ import annotations

import collections
import dataclasses
import importlib
import importlib.machinery
import io
import itertools
import json
import operator
import os
import pickle
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, NamedTuple, Sequence

from ._callgrind_worker import AGREED_REPEATS, SWITCH_ENV, dump_layout_driven, dump_totals
from .cpp import compile_cpp, instrumentation_switch
from .processes import describe_exit
from .memory_price import LL_MISS_CYCLES, PRICE_ENV
from .task_spec import Language, TaskSpec

WORKER = Path(__file__).with_name("_callgrind_worker.py")

# CPython symbols whose counts depend on dict layout and hashing rather than
# on the measured code. torch's denoise() knows only the pre-3.11 name.
NOISY_SYMBOLS = (
    "dictobject.c:lookdict_unicode",
    "dictobject.c:lookdict_unicode_nodummy",
    "dictobject.c:unicodekeys_lookup_unicode",
    "dictobject.c:_Py_dict_lookup",
)

# True: instrumented from the start even where the switch exists, as torch runs valgrind (the same counts,
# a slower start: evaluation/callgrind_startup.py compares the two)
INSTRUMENT_AT_START = False

# Worker environment. A fixed hash seed fixes dict layouts; fixed malloc
# thresholds switch off glibc's dynamic mmap/trim adjustment, which otherwise
# changes allocator paths (and counts) as a process ages.
WORKER_ENV = {
    "PYTHONHASHSEED": "0",
    "MALLOC_MMAP_THRESHOLD_": str(64 * 1024 * 1024),
    "MALLOC_TRIM_THRESHOLD_": str(256 * 1024 * 1024),
    "MALLOC_TOP_PAD_": str(64 * 1024 * 1024),
    "MKL_THREADING_LAYER": "GNU",  # pytorch#37377
}


class CallgrindError(OSError, RuntimeError):
    """A statement (or the valgrind process) failed; the message says which and why.

    An OSError because torch raises OSError when its valgrind process fails, so
    `except OSError` written for torch catches it; still a RuntimeError, as before.
    """


class FunctionCount(NamedTuple):
    # TODO: `count` shadows tuple.count (pytorch#105471); kept for compatibility.
    count: int  # type: ignore[assignment]
    function: str


def _print_linewidth() -> int:
    """torch.set_printoptions(linewidth=...), which torch's FunctionCounts follows; 80 before torch is imported."""
    torch = sys.modules.get("torch")
    opts = getattr(getattr(torch, "_tensor_str", None), "PRINT_OPTS", None)
    return int(getattr(opts, "linewidth", 80))


@dataclasses.dataclass(repr=False, frozen=True)
class FunctionCounts:
    """(count, function) pairs, sorted by count, with an algebra for diffing."""

    _data: tuple[FunctionCount, ...]
    inclusive: bool
    truncate_rows: bool = True
    _linewidth: int | None = None

    def __iter__(self) -> Iterator[FunctionCount]:
        yield from self._data

    def __len__(self) -> int:
        return len(self._data)

    def __getitem__(self, item: Any) -> FunctionCount | "FunctionCounts":
        data = self._data[item]
        if isinstance(data, tuple) and not isinstance(data, FunctionCount):
            return FunctionCounts(data, self.inclusive, truncate_rows=False)
        return data

    def __repr__(self) -> str:
        count_len = max((len(str(c)) + int(c < 0) for c, _ in self), default=0)
        fn_len = max((self._linewidth or _print_linewidth()) - count_len - 4, 40)
        lines = []
        for c, fn in self:
            if len(fn) > fn_len:
                left = (fn_len - 5) // 2
                fn = fn[:left] + " ... " + fn[-(fn_len - left - 5):]
            lines.append(f"  {c:>{count_len}}  {fn}")
        if self.truncate_rows and len(lines) > 18:
            lines = lines[:9] + ["...".rjust(count_len + 2)] + lines[-9:]
        if not self.inclusive:
            lines.extend(["", f"Total: {self.sum()}"])
        return "\n".join([object.__repr__(self), *lines])

    def __add__(self, other: "FunctionCounts") -> "FunctionCounts":
        return self._merge(other, lambda c: c)

    def __sub__(self, other: "FunctionCounts") -> "FunctionCounts":
        return self._merge(other, operator.neg)

    def __mul__(self, other: int | float) -> "FunctionCounts":
        return self._from_dict({fn: int(c * other) for c, fn in self}, self.inclusive)

    def transform(self, map_fn: Callable[[str], str]) -> "FunctionCounts":
        """Rename functions; entries mapped to one name are added together."""
        counts: dict[str, int] = collections.defaultdict(int)
        for c, fn in self:
            counts[map_fn(fn)] += c
        return self._from_dict(counts, self.inclusive)

    def filter(self, filter_fn: Callable[[str], bool]) -> "FunctionCounts":
        return FunctionCounts(tuple(i for i in self if filter_fn(i.function)), self.inclusive)

    def sum(self) -> int:
        return sum(c for c, _ in self)

    def denoise(self) -> "FunctionCounts":
        """Drop CPython dict-lookup symbols (names for 3.10 and 3.11+ alike)."""
        return self.filter(lambda fn: not any(s in fn for s in NOISY_SYMBOLS))

    def _merge(self, other: "FunctionCounts", merge_fn: Callable[[int], int]) -> "FunctionCounts":
        if self.inclusive != other.inclusive:
            raise ValueError("Cannot merge inclusive and exclusive counts.")
        counts: dict[str, int] = collections.defaultdict(int)
        for c, fn in self:
            counts[fn] += c
        for c, fn in other:
            counts[fn] += merge_fn(c)
        return self._from_dict(counts, self.inclusive)

    @staticmethod
    def _from_dict(counts: dict[str, int], inclusive: bool) -> "FunctionCounts":
        return FunctionCounts(
            tuple(sorted((FunctionCount(c, fn) for fn, c in counts.items() if c), reverse=True)), inclusive
        )

    def to_list(self) -> list[list[Any]]:
        return [[c, fn] for c, fn in self]

    @classmethod
    def from_list(cls, rows: Iterable[Sequence[Any]], inclusive: bool) -> "FunctionCounts":
        return cls(tuple(FunctionCount(int(c), str(fn)) for c, fn in rows), inclusive)


_STANDARDIZE = (
    (r"^.+build/\.\./", "build/../"),
    (r"^.+/" + re.escape("build/aten/"), "build/aten/"),
    (r"^.+/" + re.escape("Python/"), "Python/"),
    (r"^.+/" + re.escape("Objects/"), "Objects/"),
    (r"\s\[.+\]$", ""),
)


@dataclasses.dataclass(repr=False, eq=False, frozen=True)
class CallgrindStats:
    """Counts for `number_per_run` runs of one statement, plus the empty-loop baseline."""

    task_spec: TaskSpec
    number_per_run: int
    built_with_debug_symbols: bool
    baseline_inclusive_stats: FunctionCounts
    baseline_exclusive_stats: FunctionCounts
    stmt_inclusive_stats: FunctionCounts
    stmt_exclusive_stats: FunctionCounts
    stmt_callgrind_out: str | None
    # collect_callgrind_many(simulate=True): each dump's total of every simulated event (SIM_EVENTS), for
    # number_per_run runs; None where the caches and branches were not simulated
    stmt_events: dict[str, int] | None = None
    baseline_events: dict[str, int] | None = None
    # collect_callgrind_many(functions=False): the dumps' instruction totals, read from their summary line,
    # with no function tables parsed (the stats above are then empty); None where the tables were parsed
    stmt_total: int | None = None
    baseline_total: int | None = None
    # each dump's instructions in code whose path follows memory addresses rather than the code
    # (_callgrind_worker.dump_layout_driven: glibc's malloc, CPython's pymalloc and its type cache's misses);
    # None where they were not read
    stmt_layout_driven: int | None = None
    baseline_layout_driven: int | None = None

    def stats(self, inclusive: bool = False) -> FunctionCounts:
        return self.stmt_inclusive_stats if inclusive else self.stmt_exclusive_stats

    def counts(self, *, denoise: bool = False, subtract_baseline: bool = False) -> int:
        """Instructions for number_per_run runs.

        subtract_baseline removes what the same loop costs with `pass` (loop
        and collection toggles): torch collects that baseline but never
        subtracts it.
        """
        if self.stmt_total is not None:  # counted without function tables: the dump's summary line
            if denoise:
                raise ValueError("denoise needs the function tables: count with collect_callgrind_many(functions=True)")
            return self.stmt_total - ((self.baseline_total or 0) if subtract_baseline else 0)
        stmt, base = self.stmt_exclusive_stats, self.baseline_exclusive_stats
        if denoise:
            stmt, base = stmt.denoise(), base.denoise()
        return stmt.sum() - (base.sum() if subtract_baseline else 0)

    def layout_driven(self, *, subtract_baseline: bool = False) -> int | None:
        """Of counts(), the instructions in code whose path follows memory addresses rather than the code (the
        memory allocators and CPython's type cache's misses: _callgrind_worker.LAYOUT_DRIVEN_FUNCTIONS), for
        number_per_run runs; None where they were not read."""
        if self.stmt_layout_driven is None:
            return None
        return self.stmt_layout_driven - ((self.baseline_layout_driven or 0) if subtract_baseline else 0)

    def code_counts(self, *, subtract_baseline: bool = False) -> int:
        """counts() less layout_driven(): the instructions of the code itself, which a commit that moves the
        memory layout without changing the code does not move; counts() where the layout-driven share was not
        read."""
        driven = self.layout_driven(subtract_baseline=subtract_baseline) or 0
        return self.counts(subtract_baseline=subtract_baseline) - driven

    def events(self, *, subtract_baseline: bool = False) -> dict[str, int] | None:
        """Simulated events (Ir, I1mr, D1mr, D1mw, ILmr, DLmr, DLmw, Bc, Bcm, Bi, Bim, ...) for number_per_run
        runs, the dump's totals; subtract_baseline removes the empty loop's, event by event, as counts() does
        for Ir. None without simulation (collect_callgrind_many(simulate=True))."""
        if self.stmt_events is None:
            return None
        base = self.baseline_events or {}
        return {k: v - (base.get(k, 0) if subtract_baseline else 0) for k, v in self.stmt_events.items()}

    def cycles(self, *, subtract_baseline: bool = False) -> int | None:
        """Estimated cycles for number_per_run runs (estimated_cycles of events()); None without simulation."""
        events = self.events(subtract_baseline=subtract_baseline)
        return None if events is None else estimated_cycles(events)

    def delta(self, other: "CallgrindStats", inclusive: bool = False) -> FunctionCounts:
        return self.stats(inclusive=inclusive) - other.stats(inclusive=inclusive)

    def as_standardized(self) -> "CallgrindStats":
        """Strip build-path prefixes and library suffixes so profiles from different builds diff cleanly."""

        def strip(stats: FunctionCounts) -> FunctionCounts:
            for before, after in _STANDARDIZE:
                stats = stats.transform(lambda fn: re.sub(before, after, fn))
            return stats

        return dataclasses.replace(
            self,
            baseline_inclusive_stats=strip(self.baseline_inclusive_stats),
            baseline_exclusive_stats=strip(self.baseline_exclusive_stats),
            stmt_inclusive_stats=strip(self.stmt_inclusive_stats),
            stmt_exclusive_stats=strip(self.stmt_exclusive_stats),
            stmt_callgrind_out=None,
        )

    def __repr__(self) -> str:
        base = self.baseline_exclusive_stats
        threads = self.task_spec.num_threads
        if self.stmt_total is None:
            denoised, baseline, baseline_denoised = self.counts(denoise=True), base.sum(), base.denoise().sum()
        else:  # counted without function tables: no symbols to remove
            denoised, baseline, baseline_denoised = "-", self.baseline_total, "-"
        out = f"""
{object.__repr__(self)}
{self.task_spec.summarize()}
  {'':>25}All{'':>10}Noisy symbols removed
    Instructions: {self.counts(denoise=False):>12}{'':>15}{denoised:>12}
    Baseline:     {baseline:>12}{'':>15}{baseline_denoised:>12}
{self.number_per_run} runs per measurement, {threads} thread{'s' if threads > 1 else ''}
""".strip()
        if not self.built_with_debug_symbols:
            out += textwrap.dedent("""
            Warning: PyTorch was not built with debug symbols.
                     Source information may be limited. Rebuild with
                     REL_WITH_DEB_INFO=1 for more detailed results.""")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_spec": self.task_spec.to_dict(),
            "number_per_run": self.number_per_run,
            "built_with_debug_symbols": self.built_with_debug_symbols,
            "baseline_inclusive_stats": self.baseline_inclusive_stats.to_list(),
            "baseline_exclusive_stats": self.baseline_exclusive_stats.to_list(),
            "stmt_inclusive_stats": self.stmt_inclusive_stats.to_list(),
            "stmt_exclusive_stats": self.stmt_exclusive_stats.to_list(),
            **({"stmt_events": self.stmt_events, "baseline_events": self.baseline_events}
               if self.stmt_events is not None else {}),
            **({"stmt_total": self.stmt_total, "baseline_total": self.baseline_total}
               if self.stmt_total is not None else {}),
            **({"stmt_layout_driven": self.stmt_layout_driven, "baseline_layout_driven": self.baseline_layout_driven}
               if self.stmt_layout_driven is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CallgrindStats":
        return cls(
            task_spec=TaskSpec(**data["task_spec"]),
            number_per_run=int(data["number_per_run"]),
            built_with_debug_symbols=bool(data["built_with_debug_symbols"]),
            baseline_inclusive_stats=FunctionCounts.from_list(data["baseline_inclusive_stats"], True),
            baseline_exclusive_stats=FunctionCounts.from_list(data["baseline_exclusive_stats"], False),
            stmt_inclusive_stats=FunctionCounts.from_list(data["stmt_inclusive_stats"], True),
            stmt_exclusive_stats=FunctionCounts.from_list(data["stmt_exclusive_stats"], False),
            stmt_callgrind_out=None,
            stmt_events=data.get("stmt_events"),
            baseline_events=data.get("baseline_events"),
            stmt_total=data.get("stmt_total"),
            baseline_total=data.get("baseline_total"),
            stmt_layout_driven=data.get("stmt_layout_driven"),
            baseline_layout_driven=data.get("baseline_layout_driven"),
        )


# -- simulated caches and branches ---------------------------------------------

# valgrind's options that simulate the caches and the branch predictors in the process that counts
# (collect_callgrind_many(simulate=True)). The caches are pinned (size, associativity, line size), not read
# off the CPU: valgrind reads a virtual machine's last level as whatever its cpuid says (256 MiB,
# direct-mapped, on the 2-core machine this was written on, where nothing ever left it); pinned, the
# simulated events are the same on every machine. 32 KiB 8-way first levels and an 8 MiB 16-way
# last level: a common desktop or server core's share.
SIMULATE_OPTIONS = ("--cache-sim=yes", "--I1=32768,8,64", "--D1=32768,8,64", "--LL=8388608,16,64")
# ... and the branch predictors' (collect_callgrind_many(branches=True), the default): 11-13% of a simulated
# process's valgrind seconds (a torch loop, 253 against 223-229 s); the alert's priced cycles read no branch
# event, so its counting worker leaves them out
BRANCH_OPTIONS = ("--branch-sim=yes",)
DEADLINE_PASSED = "not counted: the deadline passed before this statement was counted"
SHARE_PASSED = "not counted: its set-up and runs outlasted its share of the time before the deadline"
# a case's share of the time before the deadline is at least this: a valgrind process's first case also
# imports the suite (10-20 s under valgrind for torch's libraries)
MIN_CASE_SECONDS = 30.0
# the events estimated_cycles weighs; every one is there when both simulations ran
SIM_EVENTS = ("Ir", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw", "Bcm", "Bim")
L1_MISS_CYCLES, MISPREDICT_CYCLES = 10, 10  # LL_MISS_CYCLES: memory_price's
LL_EVENTS = ("ILmr", "DLmr", "DLmw")  # the simulated last-level misses: instruction reads, data reads and writes


def estimated_cycles(events: dict[str, int], ll_miss_cycles: int | None = None) -> int:
    """Cycles estimated from simulated events, as CodSpeed's and KCachegrind's "Cycle Estimation" do
    (KCachegrind: CEst = Ir + 10 Bm + 10 L1m + 100 LLm):

        cycles = Ir + 10 * (I1mr + D1mr + D1mw + Bcm + Bim) + 100 * (ILmr + DLmr + DLmw)

    an instruction a cycle, a first-level miss (instruction read, data read or write) 10 more, a mispredicted
    branch (conditional or indirect) 10 more, a last-level miss 100 more. A model, not a measurement: it sees
    what instruction counts do not (a walk that leaves the caches, a branch that stops being predictable),
    deterministically, but not memory-level parallelism, prefetching or the kernel.

    `ll_miss_cycles`: a last-level miss's price instead of 100 (default: the environment's
    memory_price.PRICE_ENV, which the tracker sets to what a miss costs on this machine: memory_price.py)."""
    def total(*names: str) -> int:
        return sum(events.get(name, 0) for name in names)

    if ll_miss_cycles is None:
        ll_miss_cycles = int(os.environ.get(PRICE_ENV) or LL_MISS_CYCLES)
    return (total("Ir") + L1_MISS_CYCLES * total("I1mr", "D1mr", "D1mw") + MISPREDICT_CYCLES * total("Bcm", "Bim")
            + ll_miss_cycles * total(*LL_EVENTS))


def priced_cycles(instructions: float, events: Mapping[str, float], ll_miss_cycles: int | None = None) -> float:
    """The alert's memory estimate of a run: the code's own instructions (CallgrindStats.code_counts), a cycle
    each, plus `ll_miss_cycles` a simulated last-level miss (default: the environment's memory_price.PRICE_ENV,
    what a miss costs on this machine):

        priced cycles = own instructions + P * (ILmr + DLmr + DLmw)

    estimated_cycles without the terms that follow the memory layout rather than the code: the allocators'
    instructions (code_counts leaves them out) and the simulated first-level and branch misses. Of identical
    code at 40 commits of a plain 42-row suite (1,638 adjacent row pairs of first processes), estimated_cycles
    at 362 a miss moved 76 row pairs past 1%; priced as the alert prices them (simulated_per_run: the misses
    of each draw's warmest run), none. A change that only moves memory is what this adds to the counts; a
    first-level miss or a mispredicted branch is left to wall time."""
    if ll_miss_cycles is None:
        ll_miss_cycles = int(os.environ.get(PRICE_ENV) or LL_MISS_CYCLES)
    return instructions + ll_miss_cycles * sum(events.get(name, 0) for name in LL_EVENTS)


def simulated_per_run(stats: Sequence[CallgrindStats], draws: int = 1) -> dict[str, list[Any]]:
    """A case's simulated channels per run of its statement (per call of a CallCase), baseline subtracted as
    counts(subtract_baseline=True) is: {"cycles": [priced_cycles, one per repeat], "events": [{event: value},
    one per repeat]}, the events estimated_cycles weighs (SIM_EVENTS); {} where the caches were not simulated.

    `stats`: `draws` layout draws' repeats in turn (collect_callgrind_many(draws)). A repeat's priced cycles
    are its own instructions plus the last-level misses of its draw's last repeat, the warmest: a draw's first
    counted run still brings the case's objects into the simulated caches (made anew for each draw), and
    those cold misses follow where the objects landed, not the code. On the plain chain's first 40 commits
    (counts_noise_pool-2026-12-08-memory, 1,638 adjacent row pairs of identical code), priced with every
    repeat's own misses, 5 row pairs moved past 1% (largest 1.72%; with the first repeat's alone 22, 3.41%);
    with the last repeat's, none (largest 0.20%). A change that keeps missing, a walk through a table larger
    than the cache, misses in every run, the last included."""
    if not stats or any(s.stmt_events is None for s in stats):
        return {}
    per_run = [{k: v / s.number_per_run for k, v in s.events(subtract_baseline=True).items() if k in SIM_EVENTS}
               for s in stats]
    size = max(1, len(stats) // max(1, draws))
    warm = [per_run[min(len(per_run), (i // size + 1) * size) - 1] for i in range(len(per_run))]
    return {"cycles": [priced_cycles(s.code_counts(subtract_baseline=True) / s.number_per_run, last)
                       for s, last in zip(stats, warm)], "events": per_run}


def _dump_events(path: Path) -> dict[str, int]:
    """A callgrind out file's total of each event: its `events:` line and `summary:` (or `totals:`) line
    (_callgrind_worker.dump_totals, which the worker reads its repeats' totals with too)."""
    found = dump_totals(path)
    if found is None:
        raise CallgrindError(f"{path}: no events or totals in the callgrind out file")
    return found


# -- running valgrind ---------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class CallCase:
    """A function counted call by call, for what is a function rather than a statement (an asv `time_`
    method): `each` runs before every call with counting off (asv re-runs a benchmark's setup between its
    timed calls), `call` runs with counting on, `teardown` once at the end. The three travel to the valgrind
    process in one pickle, so bound methods of one object stay one object there. `number` calls per counted
    run and `warmup` calls before the first (a slow function needs fewer to specialise) are its own; the
    baseline is the same loop around an empty function. `prepare` runs first, once, uncounted: what it makes
    and keeps (the imports of a suite and its library, with their module-level data) is frozen out of the
    collector's reach (gc.freeze) before the case's warm-up, so that the full collection before each counted
    run scans what the cases made, not a library's tables."""

    call: Callable[[], Any]
    label: str
    number: int
    each: Callable[[], Any] | None = None
    teardown: Callable[[], Any] | None = None
    warmup: int = 128
    prepare: Callable[[], Any] | None = None

    @property
    def task_spec(self) -> TaskSpec:
        return TaskSpec(stmt=self.label, setup="", label=self.label)

    def _worker_case(self) -> dict[str, Any]:
        return {"call": self.call, "each": self.each, "teardown": self.teardown, "warmup": self.warmup,
                "prepare": self.prepare,
                "number": self.number, "stmt": "", "setup": "", "globals": {}, "scripted": {}, "num_threads": 1}


class CopyIfCallgrind:
    """torch's marker for a global to copy into the valgrind process.

    Here every global is copied, wrapped or not, and of any type that pickles
    (torch raises ValueError for others; see the README's list of differences).
    TorchScript functions and modules go through torch.jit.save/load, as in
    torch. `setup` runs in the valgrind process ahead of the Timer's setup.
    Timing uses the value itself.
    """

    def __init__(self, value: Any, *, setup: str | None = None) -> None:
        self.value = value
        self.setup = setup


@dataclasses.dataclass(frozen=True)
class Again:
    """More layout draws of cases a valgrind process has counted, in that same process once it has counted
    them all (collect_callgrind_many(then=...)): no second start-up (Python's and torch's imports under
    valgrind, and every code path translated again with instrumentation: 15-20 s a process here). Before
    them the process allocates _callgrind_worker._jitter_layout(jitter)'s objects, as a process started
    jittered does after its imports; each case is then counted in `draws` layout draws of one repeat each,
    until `deadline` (a time.time(); None: the first cases' deadline)."""

    cases: tuple[int, ...]  # indices into the timers (Python statements and CallCases)
    jitter: int
    draws: int
    deadline: float | None = None


def _require_valgrind() -> None:
    if platform.system() != "Linux":
        raise OSError(f"Valgrind is not supported on {platform.system()}: instruction counts need Linux.")
    missing = [tool for tool in ("valgrind", "callgrind_annotate") if shutil.which(tool) is None]
    if missing:
        raise OSError(
            f"Missing: {', '.join(missing)}. Instruction counts need valgrind; on Debian or Ubuntu "
            "install it with `apt-get install valgrind`."
        )


def _parse_annotate(text: str, inclusive: bool) -> FunctionCounts:
    """callgrind_annotate's table: 'count  file:function [lib]' lines after the header."""
    total_match = re.search(r"^([0-9,]+)\s+PROGRAM TOTALS", text, re.MULTILINE)
    header = re.search(r"^Ir\s+file:function\s*$", text, re.MULTILINE)
    if total_match is None or header is None:
        raise CallgrindError(f"unexpected callgrind_annotate output:\n{text[:2000]}")
    total = int(total_match.group(1).replace(",", ""))
    rows: list[FunctionCount] = []
    for line in text[header.end():].splitlines():
        m = re.match(r"^\s*([0-9,]+)\s+(.+:.+)$", line)
        if not m:
            continue
        count = int(m.group(1).replace(",", ""))
        if count == total:
            # The frames below the toggled region (main, PyEval_EvalCode...)
            # show up with the whole dump's total from the second dump of a
            # process on, even as "exclusive" counts. torch skips them too.
            continue
        rows.append(FunctionCount(count, m.group(2)))
    return FunctionCounts(tuple(sorted(rows, reverse=True)), inclusive)


def _annotate(path: Path) -> tuple[FunctionCounts, FunctionCounts]:
    def run(inclusive: bool) -> FunctionCounts:
        out = subprocess.run(
            ["callgrind_annotate", f"--inclusive={'yes' if inclusive else 'no'}", "--threshold=100",
             "--show-percs=no", "--show=Ir", "--sort=Ir", str(path)],
            capture_output=True, text=True, check=True,
        ).stdout
        return _parse_annotate(out, inclusive)

    return run(True), run(False)


def _built_with_debug_symbols() -> bool:
    import torch

    return "RelWithDebInfo" in torch.__config__.show()


def collect_callgrind_many(
    timers: Sequence[Any],
    number: int = 100,
    repeats: int = 1,
    *,
    collect_baseline: bool = True,
    retain_out_file: bool = False,
    case_timeout: float | None = 600.0,
    on_error: str = "raise",
    progress: Callable[[int, str], Any] | None = None,
    workers: int = 1,
    simulate: bool = False,
    functions: bool = True,
    draws: int = 1,
    branches: bool = True,
    deadline: float | None = None,
    on_result: Callable[[int, tuple[CallgrindStats, ...]], Any] | None = None,
    then: Callable[[], Again | None] | None = None,
    on_again: Callable[[int, Again, tuple[CallgrindStats, ...]], Any] | None = None,
    agree: float | None = None,
) -> list[tuple[CallgrindStats, ...] | CallgrindError]:
    """Instruction counts for every Timer (or CallCase): Python statements in one valgrind process (two for a
    big batch), C++ statements compiled together and counted beside them (cpp_counts).

    Returns, per timer, a tuple of `repeats` CallgrindStats. A statement that
    raises, crashes the process, or runs past `case_timeout` seconds (setup
    and warm-up included, under valgrind's ~50x slowdown) is reported with
    the reason; after a crash or a timeout the remaining statements continue
    in a fresh valgrind process. `on_error="raise"` raises one CallgrindError
    naming every failed statement; "return" puts each error in its timer's
    slot. `progress(i, event)` is called as statements start and finish. `workers=2` deals a batch of
    Python statements to two valgrind processes side by side, one a core (each given 16 statements at
    least): twice the start-up (~1 min of CPU each), near half the wall time on an idle two-core machine
    for a batch of dozens (the suite command's default).
    Counts do not depend on the process beside, only on the statements before in the same process, and a
    suite's statements are dealt the same way every run.
    `simulate=True` (Python statements and CallCases; not C++ ones) simulates the caches and branch
    predictors in the same valgrind processes (SIMULATE_OPTIONS, BRANCH_OPTIONS): each CallgrindStats then has
    its events() and estimated cycles(); the instruction counts are the same. `branches=False`: the caches
    alone (no Bc, Bcm, Bi, Bim events; 11-13% less valgrind time).
    `functions=False` (Python statements and CallCases) reads each dump's totals from its summary line and
    parses no function tables (callgrind_annotate, twice a dump: 13-31 s of a 66-row suite's 95-207 s): the
    counts are the same (the summary is the sum of the exclusive table), stats() and delta() are empty, and
    counts(denoise=True) raises.
    `draws=D` (Python statements and CallCases) counts each case in D memory layouts of the same process:
    before each draw after the first, a drawn number of objects of drawn sizes is allocated and the case's
    objects are made again after them (_callgrind_worker._draw_layout), so that they land at other offsets,
    as after a commit that changes code the case does not run. Each case's tuple then has repeats x D
    CallgrindStats, draw by draw (one layout draw for the cost of the case, not of a process).
    `deadline` (a time.time(); Python statements and CallCases): the valgrind processes still running then are
    killed; the statements counted by then keep their counts, the others get DEADLINE_PASSED as their error.
    Before it, each statement may take its share of the time left (_case_limit: at least MIN_CASE_SECONDS);
    one past it gets SHARE_PASSED, and the rest go on in a fresh process.
    `on_result(i, stats)` (Python statements and CallCases) is called with each timer's counts as soon as its
    valgrind process has counted it, from the thread that watches that process, while the next ones are
    counted (so that a caller can act on the first counts before the last: torchbench.ab.schedule).
    `then()` (one worker): called once the valgrind process has counted every case (from the thread that
    watches it, which waits for the answer): an Again has the same process count some of them again, in
    jittered layout draws, each given to `on_again(i, again, stats)` as it is counted (`stats`: one
    CallgrindStats a draw), and `then()` is asked again after them; None ends the process. A process that
    died or was stopped before its cases were all counted is asked nothing; a continued case it fails for
    is not given to on_again.
    `agree` (Python statements and CallCases, draws=1): `repeats` is then the most, not the number: a case's
    counted runs stop at _callgrind_worker.AGREED_REPEATS once their instruction totals agree within `agree`
    (their spread over the smallest), and go on, up to `repeats`, only where they do not; its tuple then has
    that many CallgrindStats (a counted run is most of a small case's seconds under valgrind).
    """
    if number < 1 or repeats < 1:
        raise ValueError(f"number and repeats must be >= 1, got {number}, {repeats}")
    if on_error not in ("raise", "return"):
        raise ValueError(f"on_error must be 'raise' or 'return', got {on_error!r}")
    if workers < 1 or draws < 1:
        raise ValueError(f"workers and draws must be >= 1, got {workers}, {draws}")
    if agree is not None and (draws != 1 or agree < 0):
        raise ValueError(f"agree= needs draws=1 and agree >= 0, got draws={draws}, agree={agree}")
    if then is not None and (workers != 1 or on_again is None):
        raise ValueError("then= continues one valgrind process (workers=1) and needs on_again=")
    _require_valgrind()
    cpp = [i for i, t in enumerate(timers) if getattr(t, "language", Language.PYTHON) is Language.CPP]
    python = [i for i in range(len(timers)) if i not in set(cpp)]
    results: list[tuple[CallgrindStats, ...] | CallgrindError] = [CallgrindError("not counted")] * len(timers)
    # C++ programs are built and counted beside the Python statements' valgrind process, not after it
    with ThreadPoolExecutor(max_workers=1) as side:
        cpp_counted = side.submit(cpp_counts, [timers[i] for i in cpp], number, repeats, collect_baseline,
                                  retain_out_file, case_timeout,
                                  (lambda j, event: progress(cpp[j], event)) if progress else None) if cpp else None
        if python:
            counted = _collect_python([timers[i] for i in python], number, repeats, collect_baseline,
                                      retain_out_file, case_timeout, on_error,
                                      (lambda j, event: progress(python[j], event)) if progress else None,
                                      workers, simulate, functions, draws, deadline,
                                      (lambda j, stats: on_result(python[j], stats)) if on_result else None,
                                      _local(then, python), (lambda j, again, stats: on_again(
                                          python[j], dataclasses.replace(again, cases=tuple(
                                              python[k] for k in again.cases)), stats)) if then else None,
                                      agree, branches)
            for i, result in zip(python, counted):
                results[i] = result
        if cpp_counted is not None:
            for i, result in zip(cpp, cpp_counted.result()):
                results[i] = result
    failed = [r for r in results if isinstance(r, CallgrindError)]
    if failed and on_error == "raise":
        raise CallgrindError("\n\n".join(str(f) for f in failed))
    return results


_MIN_SHARE = 16  # statements: a valgrind process of its own starts Python and torch (~15 s of CPU; ~1 min
# where it must start instrumented)


def _local(then: Callable[[], Again | None] | None, python: list[int]) -> Callable[[], Again | None] | None:
    """`then` with its cases' indices among the Python statements (C++ ones are not continued)."""
    if then is None:
        return None
    local = {i: j for j, i in enumerate(python)}

    def asked() -> Again | None:
        again = then()
        return None if again is None else dataclasses.replace(
            again, cases=tuple(local[i] for i in again.cases if i in local))
    return asked


def _collect_python(timers, number, repeats, collect_baseline, retain_out_file, case_timeout, on_error, progress,
                    workers=1, simulate=False, functions=True, draws=1, deadline=None, on_result=None, then=None,
                    on_again=None, agree=None, branches=True):
    """Python statements and CallCases: one valgrind process (one Python start-up under valgrind) for them
    all, or `workers` side by side, each dealt every workers-th statement; `then`, `on_again`: the process
    goes on with Again's draws (collect_callgrind_many)."""
    # a CallCase brings its own number; a Timer's statement runs `number` times per counted run
    cases = [
        dict({"number": number}, **t._worker_case(), index=i, repeats=repeats, baseline=collect_baseline, draws=draws,
             agree=agree)
        for i, t in enumerate(timers)
    ]
    blobs, unpicklable = _pickle_cases(cases, timers, on_error)
    # a share of fewer than _MIN_SHARE statements would spend more on its start-up than it saves
    workers = max(1, min(workers, len(blobs) // _MIN_SHARE))
    shares = [share for share in (blobs[k::workers] for k in range(workers)) if share]

    continued: dict[int, tuple[int, Again]] = {}  # a continued case's index: its timer's, and the Again
    rounds = itertools.count(1)  # each Again's cases are numbered after the last's

    def more() -> tuple[list[tuple[int, bytes]], Again] | None:
        """The next Again's cases, pickled under indices of their own (each Again's after the last's)."""
        again = then()
        if again is None:
            return None
        offset = len(timers) * next(rounds)
        blobs = []
        for i in again.cases:  # (indices among the timers: collect_callgrind_many's _local)
            if i in unpicklable:
                continue
            continued[offset + i] = (i, again)
            blobs.append((offset + i, _dumps(dict(cases[i], index=offset + i, repeats=1, draws=again.draws,
                                                  agree=None))))
        return blobs, again

    with tempfile.TemporaryDirectory(prefix="torchbench_callgrind_") as tmp:
        events: list[dict[str, Any]] = [{"event": "error", "case": i, "error": why} for i, why in unpicklable.items()]

        def done(index: int, so_far: list[dict[str, Any]]) -> None:
            """One case counted: its stats, read from its dumps and its process's baseline, to on_result (a
            continued one's to on_again)."""
            i, again = continued.get(index, (index, None))
            mine = [dict(e, case=0) if e.get("case") == index else e for e in so_far
                    if e.get("case") == index or e["event"] == "baseline"]
            stats = _assemble([timers[i]], mine, [cases[i]["number"]], again.draws if again else repeats * draws,
                              False, simulate, functions, agreed=agree is not None and again is None)[0]
            if isinstance(stats, CallgrindError):
                return
            if again is not None:
                on_again(i, again, stats)
            elif on_result:
                on_result(index, stats)

        def run(share: int) -> list[dict[str, Any]]:
            found: list[dict[str, Any]] = []
            remaining, launch = shares[share], 0
            while remaining:
                out_dir = Path(tmp) / f"share{share}_launch{launch}"
                out_dir.mkdir()
                new_events, unfinished = _launch(remaining, out_dir, case_timeout, (
                    lambda index, event: progress(index, event) if index < len(timers) else None) if progress else None,
                    simulate, deadline, done if on_result or then else None, more if then else None, branches)
                found.extend(new_events)
                remaining = [(index, blob) for index, blob in remaining if index in unfinished]
                launch += 1
            return found

        with ThreadPoolExecutor(max_workers=max(len(shares), 1)) as pool:
            for found in pool.map(run, range(len(shares))):
                events.extend(found)
        return _assemble(timers, events, [c["number"] for c in cases], repeats * draws, retain_out_file, simulate,
                         functions, agreed=agree is not None)


def _imported_off_path() -> dict[str, str]:
    """Top-level modules this process imported through a finder of its own rather than sys.path (or that
    sys.path would find elsewhere), with the folder that holds each. asv imports a benchmark suite so
    (asv_runner's SpecificImporter: the suite's folder, not its parent, which may hold a copy of the
    project); globals pickled from such a suite's modules load in the worker only if it finds the suite the
    same way."""
    found = {}
    for name, module in list(sys.modules.items()):
        spec = getattr(module, "__spec__", None)
        if "." in name or name == "__main__" or spec is None or not spec.has_location or not spec.origin:
            continue
        locations = spec.submodule_search_locations
        folder = os.path.dirname(locations[0] if locations else spec.origin)
        # Off the path, or shadowed there: a project's own top-level benchmarks/ on sys.path is not the
        # suite folder asv imported under the same name.
        on_path = importlib.machinery.PathFinder.find_spec(name, sys.path)
        if on_path is None or on_path.origin != spec.origin:
            found[name] = folder
    return found


def _launch(
    cases: list[tuple[int, bytes]],
    out_dir: Path,
    case_timeout: float | None,
    progress: Callable[[int, str], Any] | None,
    simulate: bool = False,
    deadline: float | None = None,
    on_done: Callable[[int, list[dict[str, Any]]], Any] | None = None,
    more: Callable[[], tuple[list[tuple[int, bytes]], Again] | None] | None = None,
    branches: bool = True,
) -> tuple[list[dict[str, Any]], set[int]]:
    """One valgrind process over the pickled `cases` (where `simulate`, simulating the caches, and the branch
    predictors too where `branches`), killed at `deadline` (time.time()) with every case not finished by then
    reported as DEADLINE_PASSED. Returns its events (each with the "dir" of its dumps) and the indices that
    still need a run (those after a crash or a timeout). `on_done(index, events so far)` as each case is counted. `more()`: asked once every case is
    counted, the further cases the process counts (Again's) or None (collect_callgrind_many's `then`)."""
    manifest = out_dir / "manifest.jsonl"
    manifest.touch()
    # Uninstrumented until the worker's first count, when it can switch instrumentation on: Python's and
    # torch's imports then run about 5x faster under valgrind, and the counts are the same (collection is on
    # only around the statements, instrumented by then). Without the switch (no compiler), instrumented
    # from the start, as torch runs it.
    # (INSTRUMENT_AT_START keeps the switch's library loaded all the same: the same process, a slower start.)
    switch = instrumentation_switch()
    at_start = "yes" if switch is None or INSTRUMENT_AT_START else "no"
    cmd = [
        "valgrind", "--tool=callgrind", f"--callgrind-out-file={out_dir / 'callgrind.out'}",
        "--dump-line=no", "--dump-instr=no", f"--instr-atstart={at_start}", "--collect-atstart=no",
        f"--log-file={out_dir / 'valgrind.log'}", *(SIMULATE_OPTIONS if simulate else ()),
        *(BRANCH_OPTIONS if simulate and branches else ()),
        sys.executable, str(WORKER), str(manifest),
    ]
    env = dict(os.environ, **WORKER_ENV, **({SWITCH_ENV: str(switch)} if switch else {}))
    with open(out_dir / "stdout", "wb") as stdout, open(out_dir / "stderr", "wb") as stderr:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=stdout, stderr=stderr, env=env,
                                start_new_session=True)
        cases = list(cases)
        payload = {"sys_path": list(sys.path), "packages": _imported_off_path(), "cases": cases,
                   "more": more is not None}
        try:
            proc.stdin.write(pickle.dumps(payload))
            if more is None:
                proc.stdin.close()
            else:
                proc.stdin.flush()
        except BrokenPipeError:
            pass

        def go_on() -> None:
            """The worker counted every case: its next cases (more()), or stdin closed, which ends it."""
            nonlocal deadline
            asked = more()
            try:
                if asked:
                    blobs, again = asked
                    cases.extend(blobs)
                    deadline = again.deadline or deadline
                    proc.stdin.write(pickle.dumps({"cases": blobs, "jitter": again.jitter, "more": True}))
                    proc.stdin.flush()
                else:
                    proc.stdin.close()
            except BrokenPipeError:
                pass

        events: list[dict[str, Any]] = []
        current: int | None = None
        started, limit = time.monotonic(), case_timeout
        with open(manifest) as feed:
            while True:
                exited = proc.poll() is not None
                for line in feed.readlines():
                    event = json.loads(line)
                    event["dir"] = str(out_dir)
                    events.append(event)
                    try:
                        if on_done and event["event"] == "case_done":
                            on_done(event["case"], events)
                        if event["event"] == "batch_done":
                            go_on()
                    except BaseException:  # the caller's error: no valgrind process is left behind it
                        os.killpg(proc.pid, signal.SIGKILL)
                        proc.wait()
                        raise
                    if event["event"] == "case":
                        current, started = event["case"], time.monotonic()
                        limit = _case_limit(case_timeout, deadline, len(cases) - len(
                            {e["case"] for e in events if e["event"] in ("case_done", "error")}))
                        if progress:
                            progress(current, "start")
                    elif event["event"] in ("case_done", "error") and event.get("case") == current:
                        if progress:
                            progress(current, "done")
                        current = None
                if exited:
                    break
                if deadline is not None and time.time() > deadline:
                    # out of time: what is counted stays counted; the rest is reported, not run again
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    finished = {e["case"] for e in events if e["event"] in ("case_done", "error")}
                    events.extend({"event": "error", "case": index, "error": DEADLINE_PASSED}
                                  for index, _ in cases if index not in finished)
                    if progress and current is not None:
                        progress(current, "done")
                    return events, set()
                if current is not None and limit is not None and time.monotonic() - started > limit:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    events.append({"event": "error", "case": current, "error": (
                        f"timed out after {limit:g} s under valgrind (process killed)" if limit == case_timeout else
                        f"{limit:.0f} s under valgrind: {SHARE_PASSED}")})
                    if progress:
                        progress(current, "done")
                    break
                time.sleep(0.1)

    done = {e["case"] for e in events if e["event"] in ("case_done", "error")}
    if any(e["event"] == "finished" for e in events):
        return events, set()
    if any(e["event"] == "fatal" for e in events) or (current is None and not done):
        # Died before any statement ran: nothing to isolate, so give up.
        fatal = next((e["error"] for e in events if e["event"] == "fatal"), f"exit code {proc.returncode}")
        log = (out_dir / "valgrind.log").read_text(errors="replace")[-2000:] if (out_dir / "valgrind.log").exists() else ""
        err = (out_dir / "stderr").read_text(errors="replace")[-2000:]
        raise CallgrindError(f"the valgrind worker failed: {fatal}\nworker stderr:\n{err}\nvalgrind log tail:\n{log}")
    if current is not None and current not in done:
        how = describe_exit(proc.returncode)
        events.append({"event": "error", "case": current,
                       "error": f"the valgrind process died while running this statement ({how})"})
        done.add(current)
        if progress:
            progress(current, "done")
    return events, {index for index, _ in cases} - done


def _case_limit(case_timeout: float | None, deadline: float | None, left: int) -> float | None:
    """The seconds a case may take once it starts: `case_timeout`, and, before a `deadline`, no more than its
    share of the time left (the time left over the `left` cases still to count, at least MIN_CASE_SECONDS), so
    that a case whose set-up or runs are slow under valgrind costs itself alone, and what a quick case leaves
    goes to the next ones."""
    if deadline is None or left <= 1:  # the last case's share is what is left: the deadline stops it
        return case_timeout
    share = max(MIN_CASE_SECONDS, (deadline - time.time()) / left)
    return share if case_timeout is None else min(case_timeout, share)


class _CasePickler(pickle.Pickler):
    """Pickles a module by its name (the worker imports it), as a global such as `{"mylib": mylib}` needs;
    pickle itself refuses modules. Anything else as pickle does."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, types.ModuleType):
            return importlib.import_module, (obj.__name__,)
        return NotImplemented


def _dumps(obj: Any) -> bytes:
    buffer = io.BytesIO()
    _CasePickler(buffer).dump(obj)
    return buffer.getvalue()


def _pickle_cases(cases: list[dict[str, Any]], timers: Sequence[Any],
                  on_error: str) -> tuple[list[tuple[int, bytes]], dict[int, str]]:
    """Each case pickled once (reused by every relaunch), and why each case that cannot travel to the worker
    cannot (naming the global). on_error="raise": such a case raises ValueError, before valgrind starts."""
    blobs, errors = [], {}
    for case, timer in zip(cases, timers):
        try:
            blobs.append((case["index"], _dumps(case)))
        except Exception as failure:
            why = f"{timer.task_spec.title!r} cannot be copied into the valgrind process ({failure})"
            for name, value in case["globals"].items():
                try:
                    _dumps(value)
                except Exception as e:
                    why = (f"global {name!r} of {timer.task_spec.title!r} cannot be copied into the valgrind "
                           f"process ({e}); create it in `setup` instead")
                    break
            if on_error == "raise":
                raise ValueError(why) from failure
            errors[case["index"]] = why
    return blobs, errors


def _assemble(timers, events, numbers, repeats, retain_out_file, simulate=False, functions=True, agreed=False):
    """Each timer's CallgrindStats, one a dump: `repeats` of them (`agreed`: at least AGREED_REPEATS and at
    most `repeats`, the worker having stopped once its repeats agreed), or the reason it has none."""
    dumps: dict[int, dict[int, Path]] = collections.defaultdict(dict)
    baselines: dict[tuple[str, int, str], Path] = {}  # (launch dir, number, loop kind): shared empty-loop dump
    errors: dict[int, str] = {}
    for e in events:
        if e["event"] == "dump":
            dumps[e["case"]][e["repeat"]] = Path(e["dir"]) / f"callgrind.out.{e['dump']}"
        elif e["event"] == "baseline":
            baselines[(e["dir"], e["number"], e.get("kind", "stmt"))] = Path(e["dir"]) / f"callgrind.out.{e['dump']}"
        elif e["event"] == "error":
            errors[e["case"]] = e["error"]

    wanted = sorted({d for per in dumps.values() for d in per.values()} | set(baselines.values()))
    empty = (FunctionCounts((), True), FunctionCounts((), False))
    if functions:
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            parsed = dict(zip(wanted, pool.map(_annotate, wanted)))
    else:
        parsed = dict.fromkeys(wanted, empty)
    totals = {path: _dump_events(path) for path in wanted} if simulate or not functions else {}
    driven = {path: dump_layout_driven(path) for path in wanted}
    debug = _built_with_debug_symbols()

    results: list[tuple[CallgrindStats, ...] | CallgrindError] = []
    for i, timer in enumerate(timers):
        least = min(AGREED_REPEATS, repeats) if agreed else repeats
        if i in errors or not least <= len(dumps[i]) <= repeats or sorted(dumps[i]) != list(range(len(dumps[i]))):
            why = errors.get(i, "the worker reported no counts")
            results.append(CallgrindError(f"{timer.task_spec.title!r} failed under callgrind:\n{why}"))
            continue
        number = numbers[i]
        baseline = baselines.get((str(dumps[i][0].parent), number, "call" if isinstance(timer, CallCase) else "stmt"))
        base_inc, base_exc = parsed[baseline] if baseline else empty
        base_events = (totals[baseline] if baseline else {}) if simulate else None
        stats = []
        for r in range(len(dumps[i])):
            dump = dumps[i][r]
            inc, exc = parsed[dump]
            out = dump.read_text() if retain_out_file else None
            ir = None if functions else (totals[dump]["Ir"], totals[baseline]["Ir"] if baseline else 0)
            stats.append(CallgrindStats(timer.task_spec, number, debug, base_inc, base_exc, inc, exc, out,
                                        totals.get(dump) if simulate else None, base_events,
                                        *(ir or (None, None)), driven[dump],
                                        driven[baseline] if baseline else 0))
        results.append(tuple(stats))
    return results


# -- C++ statements -------------------------------------------------------------

def cpp_counts(timers: Sequence[Any], number: int, repeats: int, collect_baseline: bool, retain_out_file: bool,
               case_timeout: float | None, progress: Callable[[int, str], Any] | None = None,
               ) -> list[tuple[CallgrindStats, ...] | CallgrindError]:
    """Timer(language="cpp") statements: compiled together (cpp.compile_cpp), then each program's cases
    counted in valgrind processes of their own, two at a time (a program loads libtorch, not Python: seconds
    to start; two cores count two at once). A missing compiler raises CppToolchainError; a statement that does
    not compile, raises or crashes is its own error."""
    results: list[tuple[CallgrindStats, ...] | CallgrindError] = [CallgrindError("not counted")] * len(timers)
    for i, error in compile_cpp(timers).items():
        results[i] = CallgrindError(f"{timers[i].task_spec.title!r} failed under callgrind:\n{error}")
    by_program: dict[tuple[Path, int], list[int]] = collections.defaultdict(list)  # a process sets its threads once
    for i, timer in enumerate(timers):
        if timer._cpp_case is not None:
            by_program[(timer._cpp_case.program, timer.task_spec.num_threads)].append(i)
    # two valgrind processes at a time: a program's cases split in two halves, and programs side by side
    jobs = [members[half::2] for members in by_program.values() for half in (0, 1) if members[half::2]]

    def count(members: list[int]) -> None:
        for i, result in _count_program([timers[i] for i in members], number, repeats, collect_baseline,
                                        retain_out_file, case_timeout).items():
            results[members[i]] = result
            if progress:
                progress(members[i], "done")

    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(count, jobs))
    return results


def _count_program(timers: Sequence[Any], number: int, repeats: int, collect_baseline: bool,
                   retain_out_file: bool, case_timeout: float | None) -> dict[int, tuple[CallgrindStats, ...] | CallgrindError]:
    """The cases of one program, in as few valgrind processes as failures allow: a case that raises is
    reported and the rest go on; one that crashes the process or runs past `case_timeout` is reported, and
    the rest go on in a fresh process."""
    program = timers[0]._cpp_case.program
    debug = _built_with_debug_symbols()
    results: dict[int, tuple[CallgrindStats, ...] | CallgrindError] = {}
    remaining = list(range(len(timers)))
    with tempfile.TemporaryDirectory(prefix="torchbench_callgrind_cpp_") as tmp:
        for launch in itertools.count():
            if not remaining:
                break
            out = Path(tmp) / f"launch{launch}" / "callgrind.out"
            out.parent.mkdir()
            cases = ",".join(str(timers[i]._cpp_case.index) for i in remaining)
            cmd = [
                "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--dump-line=no", "--dump-instr=no",
                "--instr-atstart=no", "--collect-atstart=no", f"--log-file={out.parent / 'valgrind.log'}",
                str(program), "--number", str(number), "--number-warmup", str(min(number, 10)),
                "--repeats", str(repeats), "--number-threads", str(timers[remaining[0]].task_spec.num_threads),
                "--cases", cases, *(["--baseline"] if collect_baseline else []),
            ]
            by_index = {timers[i]._cpp_case.index: i for i in remaining}
            stdout, returncode, stderr = _run_counted(cmd, case_timeout * len(remaining) if case_timeout else None)
            dumps: dict[int, list[Path]] = collections.defaultdict(list)
            baseline: Path | None = None
            n_dump = 0
            for line in stdout.splitlines():
                word, _, rest = line.partition(" ")
                if word == "dump":
                    n_dump += 1
                    dumps[by_index[int(rest.split()[0])]].append(Path(f"{out}.{n_dump}"))
                elif word == "done":
                    i = by_index[int(rest)]
                    results[i] = _cpp_stats(timers[i], number, dumps[i], retain_out_file, debug)
                elif word == "error":
                    i = by_index[int(rest.split()[0])]
                    why = "\n".join(ln for ln in stderr.splitlines() if f"case {timers[i]._cpp_case.index}:" in ln)
                    results[i] = CallgrindError(why or rest)
                elif word == "baseline":
                    n_dump += 1
                    baseline = Path(f"{out}.{n_dump}")
            finished = [i for i in remaining if i in results]
            if baseline is not None:
                base = _annotate(baseline)
                for i in finished:
                    if not isinstance(results[i], CallgrindError):
                        results[i] = tuple(dataclasses.replace(s, baseline_inclusive_stats=base[0],
                                                               baseline_exclusive_stats=base[1]) for s in results[i])
            unfinished = [i for i in remaining if i not in results]
            if unfinished and returncode not in (0, 3):
                # the process died (or timed out) in the first unfinished case: that one fails, the rest go on
                how = "was killed at its timeout" if returncode is None else f"ended with {describe_exit(returncode)}"
                results[unfinished[0]] = CallgrindError(
                    f"the program {how} while counting this statement:\n"
                    f"{stderr[-2000:].strip()}")
            elif unfinished:
                for i in unfinished:
                    results[i] = CallgrindError(f"the program reported nothing for this statement:\n{stderr[-2000:]}")
            remaining = [i for i in remaining if i not in results]
    return results


def _run_counted(cmd: list[str], timeout: float | None) -> tuple[str, int | None, str]:
    """Run a program under valgrind: its stdout, exit status (None: killed at `timeout`) and stderr."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, **WORKER_ENV), start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
        return stdout, proc.returncode, stderr
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        return stdout, None, stderr + f"\ntimed out after {timeout:g} s under valgrind (process killed)"


def _cpp_stats(timer: Any, number: int, dumps: list[Path], retain_out_file: bool,
               debug: bool) -> tuple[CallgrindStats, ...]:
    empty = (FunctionCounts((), True), FunctionCounts((), False))
    return tuple(
        CallgrindStats(timer.task_spec, number, debug, *empty, *_annotate(dump),
                       dump.read_text() if retain_out_file else None, stmt_layout_driven=dump_layout_driven(dump))
        for dump in dumps
    )
