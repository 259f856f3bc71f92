"""Timer: timeit with torch's gotchas handled (threads, accelerator sync, warm-up).

The statement loop is stdlib timeit's, compiled into a *generator*: setup runs
once when a measurement call starts, and each timed block resumes the same
frame. So stmt and setup share locals exactly as in timeit, while setup is not
re-run per block (torch.utils.benchmark re-runs it for every block, which
resets stateful setup and multiplies expensive setup by the block count).
"""

from __future__ import annotations

import gc
import io
import itertools
import math
import textwrap
import warnings
from typing import Any, Callable, Generator

from . import clock
from .callgrind import CopyIfCallgrind
from .cpp import CppCase, CppCompileError, CppProcess, CppSource
from .cpp import build as build_cpp
from .measurement import Measurement
from .task_spec import Language, TaskSpec
from .threads import set_torch_threads

# Same loop as timeit.template; a block's number of runs arrives through send(), and its iterator is made
# before the clock starts, as timeit makes it before calling inner().
_TEMPLATE = """
def _torchbench_inner(_timer, _repeat, _stmt=None, _setup=None):
{setup}
    _n = yield
    while True:
        _it = _repeat(None, _n)
        _t0 = _timer()
        for _i in _it:
{stmt}
            pass
        _t1 = _timer()
        _n = yield _t1 - _t0
"""

_MIN_BLOCK_TIME = 1e-9  # torch clamps a block to >= 1 ns so ratios stay finite.
_MAX_NUMBER = 2**31 - 1  # torch's guard (pytorch#54114); kept for C++ parity.
_OVERHEAD_PROBES = 5
_MIN_ADAPTIVE_SAMPLES = 10  # torch stops after 4, too few for a stable IQR.

BlockCallback = Callable[[int, float], Any]


def _clean(src: str) -> str:
    src = textwrap.dedent(src)
    return (src[1:] if src.startswith("\n") else src).rstrip()


def _callable_name(fn: Callable[..., Any]) -> str:
    name = getattr(fn, "__qualname__", None) or repr(fn)
    return f"{name}()"


def _check_compiles(src: str, what: str) -> None:
    try:
        compile(src, f"<{what}>", "exec")
    except SyntaxError as e:
        raise ValueError(
            f"{what} does not compile: {e.msg} (line {e.lineno}):\n{textwrap.indent(src, '    ')}"
        ) from e


class Timer:
    """Time a statement; methods return a Measurement (seconds per run).

    Drop-in for torch.utils.benchmark.Timer, plus: callable stmt/setup,
    `repeat` and `autorange`, setup once per measurement call, a CPU-only
    clock fast path, and a minimum sample count in adaptive_autorange.
    """

    def __init__(
        self,
        stmt: str | Callable[[], Any] = "pass",
        setup: str | Callable[[], Any] = "pass",
        global_setup: str = "",
        timer: Callable[[], float] = clock.timer,
        globals: dict[str, Any] | None = None,
        label: str | None = None,
        sub_label: str | None = None,
        description: str | None = None,
        env: str | None = None,
        num_threads: int = 1,
        language: Language | str = Language.PYTHON,
    ) -> None:
        language = Language.parse(language)
        if global_setup and language is not Language.CPP:
            raise ValueError("global_setup is C++ only; put Python imports in setup.")
        if not isinstance(num_threads, int) or isinstance(num_threads, bool) or num_threads < 1:
            raise ValueError(f"num_threads must be a positive integer, got {num_threads!r}")

        import torch  # deferred so Measurement/Compare import without torch

        self._torch = torch
        self._language = language
        self._threads = set_torch_threads(num_threads, torch)
        if language is Language.CPP:
            if globals:
                raise ValueError("C++ statements take no globals (as in torch): build the values in `setup`")
            self._init_cpp(stmt, setup, global_setup, label, sub_label, description, env, num_threads)
            return
        self._globals = dict(globals or {})
        self._globals.setdefault("torch", torch)
        # The loop reads the resolved clock directly, not the timer() wrapper.
        self._timer = clock.default_clock() if timer is clock.timer else timer

        stmt_src, stmt_fn = self._source(stmt, "stmt")
        setup_src, setup_fn = self._source(setup, "setup")
        self._stmt_fn, self._setup_fn = stmt_fn, setup_fn
        self._stmt_src, self._setup_src = stmt_src, setup_src
        code = _TEMPLATE.format(
            setup=textwrap.indent(setup_src or "pass", " " * 4),
            stmt=textwrap.indent(stmt_src or "pass", " " * 12),
        )
        # Timing runs on the values themselves, as torch's does; the wrappers
        # only tell collect_callgrind how to copy them.
        namespace = {k: v.value if isinstance(v, CopyIfCallgrind) else v for k, v in self._globals.items()}
        exec(compile(code, "<torchbench_core.Timer>", "exec"), namespace)
        self._inner = namespace.pop("_torchbench_inner")

        self._task_spec = TaskSpec(
            stmt=_callable_name(stmt) if stmt_fn else stmt_src,
            setup=_callable_name(setup) if setup_fn else setup_src,
            global_setup="",
            label=label,
            sub_label=sub_label,
            description=description,
            env=env,
            num_threads=num_threads,
        )

    def _init_cpp(self, stmt: Any, setup: Any, global_setup: str, label: str | None, sub_label: str | None,
                  description: str | None, env: str | None, num_threads: int) -> None:
        """C++ statements (cpp.py): compiled on first use, into a cache shared by every process."""
        for what, code in (("stmt", stmt), ("setup", setup), ("global_setup", global_setup)):
            if not isinstance(code, str):
                raise TypeError(f"a C++ {what} must be a str, got {type(code).__name__}")
        # torch's defaults are Python's "pass", which is no C++: both mean "nothing" here, as in torch
        stmt_src, setup_src = ("" if c.strip() == "pass" else _clean(c) for c in (stmt, setup))
        self._cpp = CppSource(stmt_src, setup_src, _clean(global_setup))
        self._cpp_case: CppCase | None = None
        self._cpp_error: CppCompileError | None = None  # once it failed to compile, it is not compiled again
        self._task_spec = TaskSpec(
            stmt=stmt_src, setup=setup_src, global_setup=self._cpp.global_setup, label=label,
            sub_label=sub_label, description=description, env=env, num_threads=num_threads,
        )

    @property
    def language(self) -> Language:
        return self._language

    def use_cpp_case(self, case: CppCase) -> None:
        """Run this statement from an already compiled program (compile_cpp, in another process)."""
        if self._language is not Language.CPP:
            raise ValueError("use_cpp_case() is for Timer(language='cpp')")
        self._cpp_case = case

    def cpp_case(self) -> CppCase:
        """Where the compiled C++ statement is: compiled on first use (or by compile_cpp with others)."""
        if self._language is not Language.CPP:
            raise ValueError("cpp_case() is for Timer(language='cpp')")
        if self._cpp_error is not None:
            raise self._cpp_error
        if self._cpp_case is None:
            try:
                self._cpp_case = build_cpp(self._cpp)
            except CppCompileError as e:
                self._cpp_error = e
                raise
        return self._cpp_case

    @property
    def cpp_compiled(self) -> bool:
        """Whether compiling this C++ statement was tried (it either has its program or its error)."""
        return self._cpp_case is not None or self._cpp_error is not None

    @staticmethod
    def _source(code: str | Callable[[], Any], what: str) -> tuple[str, Callable[[], Any] | None]:
        if callable(code):
            return f"_{what}()", code
        if not isinstance(code, str):
            raise TypeError(f"{what} must be a str or a callable, got {type(code).__name__}")
        src = _clean(code)
        _check_compiles(src, what)
        return src, None  # "pass" stays: the task spec, repr and Compare show it, as torch's

    @property
    def task_spec(self) -> TaskSpec:
        return self._task_spec

    # -- instruction counts -------------------------------------------------
    def _worker_case(self, in_place: bool = False) -> dict[str, Any]:
        """What the callgrind worker needs to rebuild this statement in its process. `in_place`: for a Timer
        made in the valgrind process itself (an asv method's, asv_worker.AsvTimed), whose globals travel
        nowhere: TorchScript values are kept as they are, not saved for a copy."""
        setup_lines, values, scripted = [], {}, {}
        for name, value in self._globals.items():
            if name == "torch" and value is self._torch:
                continue  # the worker imports its own
            if isinstance(value, CopyIfCallgrind):
                if value.setup:
                    setup_lines.append(_clean(value.setup))
                value = value.value
            if not in_place and isinstance(value, (self._torch.jit.ScriptFunction, self._torch.jit.ScriptModule)):
                # TorchScript does not pickle; torch copies it with torch.jit.save/load too.
                buffer = io.BytesIO()
                self._torch.jit.save(value, buffer)
                scripted[name] = buffer.getvalue()
            else:
                values[name] = value
        return {
            "stmt": self._stmt_src,
            "setup": "\n".join([*setup_lines, self._setup_src]),
            "stmt_fn": self._stmt_fn,
            "setup_fn": self._setup_fn,
            "globals": values,
            "scripted": scripted,
            "num_threads": self._task_spec.num_threads,
        }

    def collect_callgrind(
        self,
        number: int = 100,
        *,
        repeats: int | None = None,
        collect_baseline: bool = True,
        retain_out_file: bool = False,
    ) -> Any:
        """Instruction counts of `number` runs under callgrind (a CallgrindStats,
        or a tuple of `repeats` of them). Many timers: callgrind.collect_callgrind_many."""
        from .callgrind import collect_callgrind_many

        if repeats is not None and repeats < 1:
            raise ValueError(f"repeats must be >= 1, got {repeats}")
        (stats,) = collect_callgrind_many(
            [self], number, repeats or 1, collect_baseline=collect_baseline, retain_out_file=retain_out_file
        )
        return stats if repeats is not None else stats[0]

    # -- blocks -------------------------------------------------------------
    def _session(self) -> Generator[float, Any, None]:
        """Start a measurement call: runs setup once, returns the block runner."""
        gen = (self._cpp_blocks() if self._language is Language.CPP
               else self._inner(self._timer, itertools.repeat, self._stmt_fn, self._setup_fn))
        next(gen)
        return gen

    def _cpp_blocks(self) -> Generator[float, Any, None]:
        """The C++ twin of the Python loop: one process, setup run once, a block per number sent."""
        with CppProcess(self.cpp_case(), self._task_spec.num_threads) as process:
            number = yield 0.0
            while True:
                number = yield process.block(number)

    @staticmethod
    def _block(session: Generator[float, Any, None], number: int) -> float:
        """Time `number` runs in one block with the GC off, as timeit does."""
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            elapsed = session.send(number)
        finally:
            if gc_was_enabled:
                gc.enable()
        return max(elapsed, _MIN_BLOCK_TIME)

    def _measurement(self, number: int, raw_times: list[float]) -> Measurement:
        return Measurement(number_per_run=number, raw_times=raw_times, task_spec=self._task_spec)

    # -- timeit-style API ---------------------------------------------------
    def timeit(self, number: int = 1_000_000) -> Measurement:
        """One block of `number` runs after a short warm-up (one sample)."""
        with self._threads:
            session = self._session()
            try:
                self._block(session, max(number // 100, 2))
                elapsed = self._block(session, number)
            finally:
                session.close()
        return self._measurement(number, [elapsed])

    def repeat(self, repeat: int = 5, number: int = 1_000_000) -> Measurement:
        """`repeat` blocks of `number` runs after a warm-up: `repeat` samples."""
        if repeat < 1:
            raise ValueError(f"repeat must be >= 1, got {repeat}")
        with self._threads:
            session = self._session()
            try:
                self._block(session, max(number // 100, 2))
                times = [self._block(session, number) for _ in range(repeat)]
            finally:
                session.close()
        return self._measurement(number, times)

    def autorange(self, callback: BlockCallback | None = None) -> Measurement:
        """timeit.Timer.autorange: grow number (1, 2, 5, 10, ...) until a block takes >= 0.2 s.

        Returns that last block as a one-sample Measurement.
        """
        with self._threads:
            session = self._session()
            try:
                for exponent in itertools.count():
                    for factor in (1, 2, 5):
                        number = factor * 10**exponent
                        elapsed = self._block(session, number)
                        if callback is not None:
                            callback(number, elapsed)
                        if elapsed >= 0.2:
                            return self._measurement(number, [elapsed])
            finally:
                session.close()
        raise AssertionError("unreachable")

    # -- autoranging --------------------------------------------------------
    def _estimate_block_size(
        self, session: Generator[float, Any, None], min_run_time: float
    ) -> tuple[int, float | None]:
        """Grow the block 10x at a time until the clock's overhead is <= 0.01% of it (torch's target).

        torch's rule stops at the first probe that looks long enough, so a
        cold first call (lazy initialisation) or a slow stretch of the machine
        during one probe sizes the blocks too small: of 37 fresh processes
        timing torch.add here, one picked number=1 (the clock then ~4% of every
        sample) and three picked 1000 instead of 10000. So the first call runs
        alone as warm-up, and a probe that would end the growth is repeated:
        only if the repeat also says stop does it stop. Returns the block size
        and, when earlier probes already warmed the statement up, the last
        probe's time, which is a valid sample (torch discards it).
        """
        overhead = sorted(self._block(session, 0) for _ in range(_OVERHEAD_PROBES))[
            _OVERHEAD_PROBES // 2
        ]

        def stop(elapsed: float) -> bool:
            long_enough = overhead / elapsed <= 1e-4 and elapsed >= min_run_time / 1000
            return long_enough or elapsed > min_run_time

        self._block(session, 1)  # warm-up: a cold first call must not size the blocks
        number = 1
        while True:
            elapsed = self._block(session, number)
            if stop(elapsed):
                elapsed = self._block(session, number)  # confirm: one slow probe is not enough
                if stop(elapsed):
                    break
            if number * 10 > _MAX_NUMBER:
                break
            number *= 10
        return number, (elapsed if number > 1 else None)

    def _measure_blocks(
        self,
        min_run_time: float,
        can_stop: Callable[[list[float], int], bool],
        max_run_time: float | None,
        callback: BlockCallback | None,
        estimate_for: float,
    ) -> Measurement:
        with self._threads:
            session = self._session()
            try:
                number, warm_probe = self._estimate_block_size(session, estimate_for)
                times = [] if warm_probe is None else [warm_probe]
                total = sum(times)
                if callback is not None and times:
                    callback(number, warm_probe)
                while total < min_run_time or not can_stop(times, number):
                    elapsed = self._block(session, number)
                    times.append(elapsed)
                    total += elapsed
                    if callback is not None:
                        callback(number, elapsed)
                    if max_run_time is not None and total > max_run_time:
                        break
            finally:
                session.close()
        return self._measurement(number, times)

    def blocked_autorange(
        self, callback: BlockCallback | None = None, min_run_time: float = 0.2
    ) -> Measurement:
        """Blocks of a fixed, auto-chosen size until `min_run_time` of samples."""
        return self._measure_blocks(
            min_run_time, lambda times, number: True, None, callback, estimate_for=min_run_time
        )

    def adaptive_autorange(
        self,
        threshold: float = 0.1,
        *,
        min_run_time: float = 0.01,
        max_run_time: float = 10.0,
        callback: BlockCallback | None = None,
        min_samples: int = _MIN_ADAPTIVE_SAMPLES,
    ) -> Measurement:
        """Blocks until IQR/median < threshold, with >= min_samples samples and
        >= min_run_time, or until max_run_time (then a RuntimeWarning)."""
        if min_samples < 4:
            raise ValueError(f"min_samples must be >= 4 for an IQR, got {min_samples}")

        def can_stop(times: list[float], number: int) -> bool:
            return (
                len(times) >= min_samples
                and self._measurement(number, times).meets_confidence(threshold)
            )

        m = self._measure_blocks(
            min_run_time, can_stop, max_run_time, callback, estimate_for=min_run_time
        )
        if not can_stop(m.raw_times, m.number_per_run):
            spread = m.iqr / m.median if len(m.raw_times) > 1 and m.median > 0 else math.nan
            warnings.warn(
                f"adaptive_autorange({m.title!r}) stopped at max_run_time={max_run_time} s "
                f"with {len(m.raw_times)} samples and IQR/median {spread:.1%}, above "
                f"threshold {threshold:.1%}: the measurement is unreliable.",
                RuntimeWarning,
                stacklevel=2,
            )
        return m
