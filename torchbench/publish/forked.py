"""Work of a publish done in forked processes: the pages in a child that gives its memory back, and the
per-label and per-series work on every core.

A publish with our plugin runs inside `asv publish`, one process that keeps everything it made until it
ends. Two things follow (measured by evaluation/publish_speed.py, 2000 commits x 200 rows):
- memory: our pages need ~130 MiB while they are made (ruptures' import of scipy alone keeps ~70 MiB,
  and the arenas of a million small objects stay fragmented after they are freed), and asv's graphs
  take ~110 MiB on top of whatever we leave; a child process (`Helper`) hands it all back when it ends;
- time: asv's publish is one process (but for its step detection). A `Helper` forked when asv starts
  reading takes each file's cells as asv parses it and turns them into the pages' records on the other
  core; the change-point search and the pages of each label are independent, so `map_forked` runs them
  on every core.

Forking, not spawning: the workers inherit what the pages were built from (no pickling of a history's
cells) and start in milliseconds. Only where fork is safe (Linux); elsewhere everything runs in this
process, with the same results.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import traceback
from typing import Callable, TypeVar

__all__ = ["FORK", "WORKERS", "Helper", "map_forked"]

T = TypeVar("T")

FORK = sys.platform.startswith("linux")
WORKERS = max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


def _died(process, what: str) -> RuntimeError:
    code = process.exitcode
    how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit status {code}"
    return RuntimeError(f"torchbench: the process {what} ended without a result ({how})")


class Helper:
    """A forked process that is handed items as they come (`put`: take(item) runs there, while this
    process goes on) and then one last call whose result comes back (`finish`: finish(*args) there);
    `prepare()` runs there at the first moment no item waits (imports the last call needs), at the
    latest before the last call.
    Its exception, in take or finish, is raised by `finish`, with its traceback as a note; take's first
    exception stops it taking more. Where fork is unsafe, take and finish run here as they are called.
    `close` (also on leaving a `with`) ends a helper that was not finished."""

    def __init__(self, take: Callable[[object], None], finish: Callable[..., T], name: str,
                 prepare: Callable[[], None] | None = None):
        self.name, self._take, self._finish, self._prepare = name, take, finish, prepare
        self._process = None
        self._error: tuple[BaseException, str] | None = None
        self._started = False  # the last call handed over, its result not yet back
        self._put = 0  # items handed over
        if not FORK:
            return
        context = multiprocessing.get_context("fork")
        self._taken = context.Value("q", 0, lock=False)  # items taken there (one writer: the child)
        self._here, there = context.Pipe(duplex=True)
        self._process = context.Process(target=self._serve, args=(there,), name=f"torchbench: {name}")
        self._process.start()
        there.close()

    def _serve(self, connection) -> None:  # in the child
        self._here.close()  # this process's copy of the parent's end: else closing that end is no EOF here
        error = None
        prepare = self._prepare

        def prepared():  # runs prepare once; its exception is told at finish
            nonlocal error, prepare
            try:
                prepare()
            except BaseException as e:  # noqa: BLE001 - told at finish
                error = error or (e, traceback.format_exc())
            prepare = None

        while True:
            if prepare is not None and not connection.poll():  # the first moment nothing waits
                prepared()
            try:
                kind, value = connection.recv()
            except EOFError:  # closed without finishing
                return
            if kind == "item":
                if error is None:
                    try:
                        self._take(value)
                    except BaseException as e:  # noqa: BLE001 - told at finish
                        error = (e, traceback.format_exc())
                self._taken.value += 1
                continue
            if prepare is not None:  # never idle: now, before the last call that needs it
                prepared()
            if error is not None:
                outcome = (False, error)
            else:
                try:
                    outcome = (True, self._finish(*value))
                except BaseException as e:  # noqa: BLE001 - handed to the parent, which raises it
                    outcome = (False, (e, traceback.format_exc()))
            try:
                connection.send(outcome)
            except (BrokenPipeError, ConnectionResetError):  # nobody is waiting for it any more
                pass
            except Exception as e:  # noqa: BLE001 - what does not pickle still goes, as text
                connection.send((False, (RuntimeError(f"{type(e).__name__}: {e}"),
                                         outcome[1][1] if not outcome[0] else "")))
            return

    @property
    def backlog(self) -> int:
        """Items put and not yet taken there (0 where take runs here): how far the helper is behind."""
        return 0 if self._process is None else self._put - self._taken.value

    def put(self, item) -> None:
        if self._process is None:
            if self._error is None:
                try:
                    self._take(item)
                except Exception as e:  # noqa: BLE001 - raised at finish, as from a child
                    self._error = (e, traceback.format_exc())
            return
        self._put += 1
        try:
            self._here.send(("item", item))
        except (BrokenPipeError, ConnectionResetError):  # it died: finish says how
            pass

    def finish(self, *args) -> T:
        """What finish(*args) returns there, once every item put is taken; its exception, or how the
        process died, raised here. Where fork is unsafe it runs here, now."""
        if self._process is None:
            if self._error is not None:
                raise self._error[0]
            return self._finish(*args)
        self._started = True
        try:
            self._here.send(("finish", args))
            ok, value = self._here.recv()
        except (EOFError, OSError):  # the pipe's end gone (BrokenPipeError, ConnectionResetError): it died
            ok, value = None, None
        self._started = False  # answered (or it died): close only reaps it
        self.close()
        if ok is None:
            raise _died(self._process, self.name)
        if ok:
            return value
        error, where = value
        error.add_note(f"in the forked process {self.name}:\n{where}")
        raise error

    def close(self) -> None:
        """End the process: one whose last call is running while this process stops waiting (an
        interrupt) is terminated, one still taking items is told there is no more (it ends at once)."""
        if self._process is not None and not self._here.closed:
            if self._started:
                self._process.terminate()
            self._here.close()
            self._process.join()

    def __enter__(self) -> "Helper":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_job: Callable | None = None  # what the workers of map_forked call: set before they are forked


def _call(i: int):
    return _job(i)


def map_forked(job: Callable[[int], T], n: int, workers: int = WORKERS) -> list[T]:
    """[job(0), ..., job(n - 1)], in `workers` forked processes (here, in order, with one worker, one
    item or no fork). `job` may be a closure over large objects: the workers inherit it; only the
    indices and the results are pickled. A worker's exception is raised here."""
    global _job
    if workers <= 1 or n <= 1 or not FORK:
        return [job(i) for i in range(n)]
    if _job is not None:  # a map inside a worker's job: that worker has its share of the cores already
        return [job(i) for i in range(n)]
    _job = job
    try:
        with multiprocessing.get_context("fork").Pool(min(workers, n)) as pool:
            return pool.map(_call, range(n), chunksize=max(1, n // (4 * workers)))
    finally:
        _job = None
