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

from .callgrind import CallgrindError, collect_callgrind_many, describe_exit
from .grouped import AutoLabels, TimerArgs, case_key
from .measurement import Measurement
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
        """Compare-table placement: a table per group, a row per case, a column per variant."""
        variant = " ".join(v for v in (self.autolabels.runtime.value, self.autolabels.autograd.value) if v)
        return {
            "label": self.label[0],
            "sub_label": " / ".join(self.label[1:]) or self.label[0],
            "description": variant or "explicit",
        }

    def timer(self) -> Timer:
        return Timer(self.timer_args.stmt, setup=self.timer_args.setup,
                     num_threads=self.timer_args.num_threads, **self.task_metadata())


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


def _wall_worker(order: WorkOrder, min_run_time: float, conn: Any) -> None:
    """Runs in the forked worker; sends ("ok", measurement dict) or ("error", traceback)."""
    try:
        measurement = order.timer().blocked_autorange(min_run_time=min_run_time)
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

    def run(self) -> list[CaseResult]:
        results = [CaseResult(order) for order in self.orders]
        if self.wall:
            self._run_wall(results)
        if self.counts:
            self._run_counts(results)
        return results

    # -- wall time ----------------------------------------------------------
    def _run_wall(self, results: Sequence[CaseResult]) -> None:
        from tqdm import tqdm  # deferred: asv benchmark environments import this module without tqdm

        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["torch", "torchbench_core.timing"])
        with tqdm(results, desc="wall time", unit="case", file=sys.stderr, disable=not self.progress) as bar:
            for result in bar:
                bar.set_postfix_str(result.order.key[:60])
                self._wall_case(ctx, result)

    def _wall_case(self, ctx: Any, result: CaseResult) -> None:
        failures = []
        for _ in range(1 + self.retries):
            result.attempts += 1
            receiver, sender = ctx.Pipe(duplex=False)
            worker = ctx.Process(target=_wall_worker, args=(result.order, self.min_run_time, sender), daemon=True)
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
    def _run_counts(self, results: Sequence[CaseResult]) -> None:
        from tqdm import tqdm

        todo = []
        for result in results:
            if result.order.timer_args.compiled:
                # Compiling under valgrind takes hours; compiled cases are wall-time only.
                continue
            try:
                todo.append((result, result.order.timer()))
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
                    bar.set_postfix_str(todo[i][0].order.key[:60])

            stats = collect_callgrind_many(
                [timer for _, timer in todo], self.callgrind_number, self.callgrind_repeats,
                case_timeout=self.callgrind_timeout, on_error="return", progress=progress,
            )
        for (result, _), outcome in zip(todo, stats):
            if isinstance(outcome, CallgrindError):
                result.errors.append(f"instruction counts: {outcome}")
            else:
                result.instructions = [s.counts(subtract_baseline=True) for s in outcome]
                result.baseline_instructions = outcome[0].baseline_exclusive_stats.sum()
