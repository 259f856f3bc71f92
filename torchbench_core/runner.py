"""Runs materialized cases: wall time in isolated workers, instruction counts in batched valgrind.

Isolation: each case's wall time is measured in its own process, forked from
a forkserver that imported torch once (so a case costs milliseconds to start,
not an `import torch`). A case that raises, crashes or hangs past its timeout
is recorded as failed with the reason and every other case's result is kept.
Crashes and timeouts are retried; exceptions are not (they repeat).

Workers come from multiprocessing's forkserver, so a script that calls
Runner.run() needs the usual `if __name__ == "__main__":` guard.

Wall-time cases run one at a time: two timed cases sharing this machine's
two cores would disturb each other (torch's runner needs >= 4 cores and pins
cases to them; here a case gets the whole machine).
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import sys
import traceback
from typing import Any, Iterable, Sequence

from .callgrind import CallgrindError, collect_callgrind_many
from .grouped import AutoLabels, TimerArgs, case_key
from .measurement import Measurement
from .processes import describe_exit
from .task_spec import Language
from .cpp import CppCase, compile_cpp
from .timing import Timer


@dataclasses.dataclass(frozen=True)
class WorkOrder:
    label: tuple[str, ...]
    autolabels: AutoLabels
    timer_args: TimerArgs

    @property
    def key(self) -> str:
        return case_key(self.label, self.autolabels, self.timer_args)

    def task_metadata(self) -> dict[str, Any]:
        """Compare-table placement: a table per group, a row per case, a column per variant (C++ columns
        beside the Python ones)."""
        variant = " ".join(v for v in (self.autolabels.runtime.value, self.autolabels.autograd.value) if v)
        description = variant or "explicit"
        if self.autolabels.language != "Python":
            description += f" ({self.autolabels.language})"
        return {"label": self.label[0], "sub_label": " / ".join(self.label[1:]) or self.label[0],
                "description": description}

    def timer(self) -> Timer:
        args = self.timer_args
        return Timer(args.stmt, setup=args.setup, global_setup=args.global_setup, num_threads=args.num_threads,
                     language=args.language, **self.task_metadata())


@dataclasses.dataclass
class CaseResult:
    order: WorkOrder
    wall: Measurement | None = None
    instructions: list[int] | None = None  # per callgrind `number` runs, baseline subtracted
    baseline_instructions: int | None = None
    errors: list[str] = dataclasses.field(default_factory=list)
    attempts: int = 0

    @property
    def ok(self) -> bool:
        return not self.errors


def _wall_worker(order: WorkOrder, min_run_time: float, conn: Any, cpp_case: CppCase | None = None) -> None:
    """Runs in the forked worker; sends ("ok", measurement dict) or ("error", traceback). A C++ case comes
    compiled (the parent compiles every C++ case of the run in one go)."""
    try:
        timer = order.timer()
        if cpp_case is not None:
            timer.use_cpp_case(cpp_case)
        measurement = timer.blocked_autorange(min_run_time=min_run_time)
        conn.send(("ok", measurement.to_dict()))
    except BaseException:
        conn.send(("error", traceback.format_exc()))
    finally:
        conn.close()


class Runner:
    """Runs work orders; see the module docstring for isolation and retries."""

    def __init__(
        self,
        work_orders: Iterable[WorkOrder],
        *,
        wall: bool = True,
        counts: bool = True,
        min_run_time: float = 0.2,
        callgrind_number: int = 100,
        callgrind_repeats: int = 5,
        timeout: float = 120.0,
        callgrind_timeout: float = 600.0,
        retries: int = 1,
        progress: bool = True,
        workers: int = 1,
    ) -> None:
        self.orders = list(work_orders)
        seen: set[str] = set()
        for order in self.orders:
            if order.key in seen:
                raise ValueError(f"Duplicate work order: {order.key}")
            seen.add(order.key)
        self.wall, self.counts = wall, counts
        self.min_run_time = min_run_time
        self.callgrind_number, self.callgrind_repeats = callgrind_number, callgrind_repeats
        self.timeout, self.callgrind_timeout, self.retries = timeout, callgrind_timeout, retries
        self.progress = progress
        self.workers = workers  # valgrind processes side by side for the counts (wall time: one case at a time)

    def run(self) -> list[CaseResult]:
        """Counts first, then wall time: the C++ cases compile beside the Python cases' valgrind process
        (neither cares what runs beside it), and the wall-time cases then run alone on the machine."""
        results = [CaseResult(order) for order in self.orders]
        # each C++ case's program by result index, None where it does not compile (its error is recorded):
        # the counts compile them, the wall time reuses what they found
        cpp_cases: dict[int, CppCase | None] = {}
        if self.counts:
            self._run_counts(results, cpp_cases)
        if self.wall:
            self._run_wall(results, cpp_cases)
        return results

    # -- wall time ----------------------------------------------------------
    def _run_wall(self, results: Sequence[CaseResult], cpp_cases: dict[int, CppCase | None]) -> None:
        from tqdm import tqdm  # deferred: asv benchmark environments import this module without tqdm

        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["torch", "torchbench_core.timing"])
        self._compile_cpp(results, cpp_cases)
        with tqdm(results, desc="wall time", unit="case", file=sys.stderr, disable=not self.progress) as bar:
            for i, result in enumerate(bar):
                if result.order.timer_args.language == "cpp" and cpp_cases[i] is None:
                    continue  # it does not compile
                bar.set_postfix_str(result.order.key[:60])
                self._wall_case(ctx, result, cpp_cases.get(i))

    def _compile_cpp(self, results: Sequence[CaseResult], cpp_cases: dict[int, CppCase | None]) -> None:
        """Every C++ case the counts did not compile, compiled together before any is timed (one compile per
        global_setup); a case that does not compile gets its error and is not run."""
        cpp = [(i, r.order.timer()) for i, r in enumerate(results)
               if r.order.timer_args.language == "cpp" and i not in cpp_cases]
        if not cpp:
            return
        errors = compile_cpp([timer for _, timer in cpp])
        for k, (i, timer) in enumerate(cpp):
            if k in errors:
                results[i].errors.append(f"C++: {errors[k]}")
                cpp_cases[i] = None
            else:
                cpp_cases[i] = timer.cpp_case()

    def _wall_case(self, ctx: Any, result: CaseResult, cpp_case: CppCase | None) -> None:
        failures = []
        for _ in range(1 + self.retries):
            result.attempts += 1
            receiver, sender = ctx.Pipe(duplex=False)
            worker = ctx.Process(target=_wall_worker, args=(result.order, self.min_run_time, sender, cpp_case),
                                 daemon=True)
            worker.start()
            sender.close()
            try:
                if not receiver.poll(self.timeout):
                    worker.kill()
                    worker.join()
                    failures.append(f"wall time: timed out after {self.timeout:g} s (worker killed)")
                    continue
                kind, payload = receiver.recv()
            except EOFError:  # the worker died without a word
                worker.join()
                failures.append(f"wall time: worker died ({describe_exit(worker.exitcode)})")
                continue
            finally:
                receiver.close()
            worker.join()
            if kind == "ok":
                result.wall = Measurement.from_dict(payload, source=result.order.key)
                return
            result.errors.append(f"wall time: the case raised\n{payload}")
            return
        result.errors.append("\n".join(failures))

    # -- instruction counts -------------------------------------------------
    def _run_counts(self, results: Sequence[CaseResult], cpp_cases: dict[int, CppCase | None]) -> None:
        from tqdm import tqdm

        todo = []
        for index, result in enumerate(results):
            if result.order.timer_args.compiled:
                # Compiling under valgrind takes hours; compiled cases are wall-time only.
                continue
            try:
                todo.append((index, result, result.order.timer()))
            except Exception as e:  # bad definition: report it, run the rest
                result.errors.append(f"instruction counts: could not build the Timer: {e}")
        if not todo:
            return
        with tqdm(total=len(todo), desc="instruction counts", unit="case", file=sys.stderr,
                  disable=not self.progress) as bar:

            def progress(i: int, event: str) -> None:
                if event == "done":
                    bar.update(1)
                else:
                    bar.set_postfix_str(todo[i][1].order.key[:60])

            stats = collect_callgrind_many(
                [timer for _, _, timer in todo], self.callgrind_number, self.callgrind_repeats,
                case_timeout=self.callgrind_timeout, on_error="return", progress=progress, workers=self.workers,
            )
        for (index, result, timer), outcome in zip(todo, stats):
            if timer.language is Language.CPP and timer.cpp_compiled:  # the wall time reuses the program
                cpp_cases[index] = timer._cpp_case  # None: it does not compile (its error is recorded)
            if isinstance(outcome, CallgrindError):
                result.errors.append(f"instruction counts: {outcome}")
            else:
                result.instructions = [s.counts(subtract_baseline=True) for s in outcome]
                result.baseline_instructions = outcome[0].baseline_exclusive_stats.sum()
