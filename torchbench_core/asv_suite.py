"""Write asv benchmarks from Timer definitions, in a few lines.

Two ways, one result format. Either return :func:`track` of a Timer from an
asv ``track_`` method::

    from torchbench_core.asv_suite import TASK_SPEC_PARAMS, timer, track

    class Add:
        params = (["add"], ["Tensor"], ["1 float"], [1])
        param_names = list(TASK_SPEC_PARAMS)
        unit = "seconds"

        def track_add(self, label, sub_label, description, num_threads):
            x = torch.ones(1)
            return track(timer("torch.add(x, x)", globals={"x": x}, label=label, sub_label=sub_label,
                               description=description, num_threads=num_threads))

or list the cases and let :class:`TimerSuite` build the asv parameters::

    from torchbench_core.asv_suite import TimerSpec, TimerSuite

    class Dispatch(TimerSuite):
        timers = [
            TimerSpec("torch.add(x, x)", setup="x = torch.ones(1)", label="add", sub_label="Tensor",
                      description="1 float"),
            TimerSpec("torch.add(x, x)", setup="x = MyTensor(torch.ones(1))", globals={"MyTensor": MyTensor},
                      label="add", sub_label="MyTensor", description="1 float"),
        ]

Either way every asv result row carries the task-spec fields (label,
sub_label, description, num_threads) as its parameters, and the value is
asv's ``{"samples": ..., "number": ...}`` form, so asv keeps the raw samples
(with ``--record-samples``), its median, CI and quartiles. A publisher can
rebuild ``Compare`` tables from the result files alone: env is the result
file's env_name and commit.

Grouped definitions (``GroupedStmts`` and friends) become a suite through
:func:`specs_from_grouped`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from typing import Any, Iterable

from .measurement import Measurement

__all__ = ["TASK_SPEC_PARAMS", "CountsSuite", "TimerSpec", "TimerSuite", "asv_env", "samples", "specs_from_grouped", "timer",
           "track"]

TASK_SPEC_PARAMS = ("label", "sub_label", "description", "num_threads")
DEFAULT_MIN_RUN_TIME = 0.2


def asv_env() -> str | None:
    """The asv environment and commit this process measures, as a Timer env."""
    name, commit = os.environ.get("ASV_ENV_NAME"), os.environ.get("ASV_COMMIT")
    return f"{name}@{commit[:8]}" if name and commit else name


def timer(stmt: Any, setup: Any = "pass", globals: dict | None = None, *, label: str, sub_label: str,
          description: str, num_threads: int = 1, language: str = "python", global_setup: str = ""):
    """A Timer whose env is the asv environment and commit under test."""
    from .timing import Timer  # Timer imports torch; keep this module importable without it

    return Timer(stmt, setup=setup, global_setup=global_setup, globals=globals, label=label, sub_label=sub_label,
                 description=description, env=asv_env(), num_threads=num_threads, language=language)


def samples(measurement: Measurement) -> dict:
    """asv's track_ sample format: per-call values plus `number`.

    asv then keeps median, 99% CI, IQR and (with --record-samples) the raw
    samples, and `asv compare` can apply its Mann-Whitney test.
    """
    return {"samples": list(measurement.times), "number": measurement.number_per_run}


def track(t, min_run_time: float = DEFAULT_MIN_RUN_TIME) -> dict:
    """Measure a Timer with blocked_autorange and return it in asv's form."""
    return samples(t.blocked_autorange(min_run_time=min_run_time))


@dataclasses.dataclass(frozen=True)
class TimerSpec:
    """A Timer's arguments, kept as data until the benchmark process measures it.

    The arguments are Timer's own. The Timer is built in the benchmark
    process, where the asv environment and commit are known (its env).
    """

    stmt: str
    setup: str = "pass"
    globals: dict | None = dataclasses.field(default=None, compare=False)
    label: str = ""
    sub_label: str = ""
    description: str = ""
    num_threads: int = 1
    language: str = "python"  # or "cpp": a C++ statement (Timer(language="cpp"))
    global_setup: str = ""  # C++ only

    def __post_init__(self) -> None:
        for name in ("label", "sub_label", "description"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ValueError(f"TimerSpec({self.stmt!r}): {name} must be a non-empty string "
                                 f"(it is an asv parameter and a Compare table position)")
        if not isinstance(self.num_threads, int) or isinstance(self.num_threads, bool) or self.num_threads < 1:
            raise ValueError(f"TimerSpec({self.stmt!r}): num_threads must be a positive integer, "
                             f"got {self.num_threads!r}")

    @property
    def key(self) -> tuple[str, str, str, int]:
        return (self.label, self.sub_label, self.description, self.num_threads)

    def timer(self):
        return timer(self.stmt, self.setup, self.globals, label=self.label, sub_label=self.sub_label,
                     description=self.description, num_threads=self.num_threads, language=self.language,
                     global_setup=self.global_setup)

    @property
    def is_cpp(self) -> bool:
        return self.language.lower() in ("cpp", "c++")


def specs_from_grouped(definitions) -> list[TimerSpec]:
    """TimerSpecs for every concrete case of grouped definitions.

    Placement is the suite command's: a table per group, a row per case, a
    column per variant (Eager, TorchScript, torch.compile; Forward or
    Forward + Backward).
    """
    from .grouped import materialize
    from .runner import WorkOrder

    specs = []
    for case in materialize(definitions):
        order = WorkOrder(*case)
        args = order.timer_args
        specs.append(TimerSpec(args.stmt, args.setup, num_threads=args.num_threads, language=args.language,
                               global_setup=args.global_setup, **order.task_metadata()))
    return specs


def _unique(values: Iterable) -> list:
    return list(dict.fromkeys(values))


class TimerSuite:
    """Base class of an asv suite made from a list of :class:`TimerSpec`.

    A subclass sets ``timers``; at class creation it gets asv's ``params``
    and ``param_names`` (the task-spec fields), a ``track_time`` benchmark,
    and a ``version`` that changes when any statement or setup changes (set
    ``version`` yourself to keep history across such edits). asv's
    parameters are a product: combinations that no spec defines are skipped
    (asv records them as n/a, not as failures). ``min_run_time`` is
    blocked_autorange's.
    """

    timers: Iterable[TimerSpec] = ()
    min_run_time: float = DEFAULT_MIN_RUN_TIME
    unit = "seconds"

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        specs = list(cls.timers)
        if not specs:
            raise ValueError(f"{cls.__name__}: `timers` lists no TimerSpec")
        by_key: dict[tuple, TimerSpec] = {}
        for spec in specs:
            if not isinstance(spec, TimerSpec):
                raise TypeError(f"{cls.__name__}.timers: expected TimerSpec, got {type(spec).__name__}")
            if spec.key in by_key:
                raise ValueError(f"{cls.__name__}.timers: two specs share (label, sub_label, description, "
                                 f"num_threads) = {spec.key}")
            by_key[spec.key] = spec
        cls._specs = by_key
        cls.params = [_unique(key[i] for key in by_key) for i in range(len(TASK_SPEC_PARAMS))]
        cls.param_names = list(TASK_SPEC_PARAMS)
        if "version" not in cls.__dict__:
            text = repr(sorted((key, spec.stmt, spec.setup, *((spec.language, spec.global_setup) if spec.is_cpp else ()))
                               for key, spec in by_key.items()))
            cls.version = hashlib.sha256(text.encode()).hexdigest()[:16]
        # Attached here, not defined on the base: asv discovers every class a
        # benchmark module imports, and the base must not look like a suite.
        if any(spec.is_cpp for spec in by_key.values()):
            # C++ statements compile once a commit and environment, together (asv's setup_cache; the program
            # is then found in the C++ cache by every later commit of the same torch), not once a process
            cls.setup_cache = _compile_cpp_specs
            cls.setup_cache_timeout = 1800
            cls.setup = _setup_cached
            cls.track_time = _track_time_cached
        else:
            cls.setup = _setup
            cls.track_time = _track_time


class CountsSuite:
    """Base class of an asv suite that counts the instructions of a :class:`TimerSuite`'s cases.

    A subclass sets ``of`` to the TimerSuite::

        class DispatchCounts(CountsSuite):
            of = Dispatch

    Its ``track_instructions`` rows carry the same task-spec parameters as the
    timed rows, with unit "instructions": torchbench's Compare pages show each
    case's counts beside its time. One valgrind process counts every case of
    a commit (asv's ``setup_cache``), so the suite pays valgrind's start-up
    (tens of seconds with torch) once, not once per case. Each row's samples
    are instructions per run, ``repeats`` of them, baseline subtracted, of the
    code itself: outside the memory allocators and CPython's type cache's
    misses, whose paths follow memory addresses, which a commit moves without
    changing the code (``CallgrindStats.code_counts``).
    """

    of: type | None = None
    number, repeats = 100, 3
    unit = "instructions"
    setup_cache_timeout = 1800

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        suite = cls.__dict__.get("of")
        if not (isinstance(suite, type) and issubclass(suite, TimerSuite)):
            raise TypeError(f"{cls.__name__}.of: expected a TimerSuite subclass, got {suite!r}")
        cls._specs = suite._specs
        cls.params, cls.param_names = suite.params, suite.param_names
        if "version" not in cls.__dict__:
            cls.version = suite.version
        cls.setup_cache = _count_every_case
        cls.setup = _counts_setup
        cls.track_instructions = _track_instructions


def _count_every_case(self) -> dict:
    from .callgrind import CallgrindError, collect_callgrind_many

    keys = list(self._specs)
    outcomes = collect_callgrind_many([self._specs[k].timer() for k in keys], self.number, self.repeats,
                                      on_error="return")
    return {key: str(o) if isinstance(o, CallgrindError)
            else [s.code_counts(subtract_baseline=True) / self.number for s in o] for key, o in zip(keys, outcomes)}


def _counts_setup(self, cache, label, sub_label, description, num_threads) -> None:
    _setup(self, label, sub_label, description, num_threads)


def _track_instructions(self, cache, label, sub_label, description, num_threads) -> dict:
    counts = cache[(label, sub_label, description, num_threads)]
    if isinstance(counts, str):
        raise RuntimeError(counts)  # this case failed under valgrind; the others stand
    return {"samples": counts, "number": self.number}


def _setup(self, label, sub_label, description, num_threads) -> None:
    if (label, sub_label, description, num_threads) not in self._specs:
        raise NotImplementedError("no TimerSpec for this combination")  # asv: skipped, not failed


def _track_time(self, label, sub_label, description, num_threads) -> dict:
    spec = self._specs[(label, sub_label, description, num_threads)]
    return track(spec.timer(), self.min_run_time)


def _compile_cpp_specs(self) -> dict:
    """{key: [program, case]} for every C++ spec, compiled in one go (cpp.compile_cpp); a spec that does
    not compile has its error there instead, and fails alone."""
    from .cpp import compile_cpp

    keys = [key for key, spec in self._specs.items() if spec.is_cpp]
    timers = [self._specs[key].timer() for key in keys]
    errors = compile_cpp(timers)
    return {key: str(errors[i]) if i in errors else [str(t.cpp_case().program), t.cpp_case().index]
            for i, (key, t) in enumerate(zip(keys, timers))}


def _setup_cached(self, cache, label, sub_label, description, num_threads) -> None:
    _setup(self, label, sub_label, description, num_threads)


def _track_time_cached(self, cache, label, sub_label, description, num_threads) -> dict:
    from pathlib import Path

    from .cpp import CppCase

    key = (label, sub_label, description, num_threads)
    t = self._specs[key].timer()
    if key in cache:
        if isinstance(cache[key], str):
            raise RuntimeError(cache[key])  # this statement does not compile; the others stand
        t.use_cpp_case(CppCase(Path(cache[key][0]), cache[key][1]))
    return track(t, self.min_run_time)
