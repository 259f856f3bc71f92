"""Work of a publish done in forked processes: the pages in a child that gives its memory back, and the
per-label and per-series work on every core.

A publish with our plugin runs inside `asv publish`, one process that keeps everything it made until it
ends. Two things follow (measured by evaluation/publish_speed.py, 2000 commits x 200 rows):
- memory: our pages need ~130 MiB while they are made (ruptures' import of scipy alone keeps ~70 MiB,
  and the arenas of a million small objects stay fragmented after they are freed), and asv's graphs
  take ~110 MiB on top of whatever we leave; a child process (`in_a_child`) hands it all back;
- time: asv's publish is one process (but for its step detection); the change-point search and the
  pages of each label are independent, so `map_forked` runs them on every core.

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

__all__ = ["FORK", "WORKERS", "in_a_child", "map_forked"]

T = TypeVar("T")

FORK = sys.platform.startswith("linux")
WORKERS = max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


def in_a_child(work: Callable[..., T], *args) -> T:
    """work(*args) in a forked process that this one waits for (in this process where fork is unsafe).
    Its exception is raised here, with the child's traceback as a note; a child that dies without a
    result (killed, out of memory) is a RuntimeError saying how it ended."""
    if not FORK:
        return work(*args)
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)

    def child() -> None:
        try:
            outcome = (True, work(*args))
        except BaseException as e:  # noqa: BLE001 - handed to the parent, which raises it
            outcome = (False, (e, traceback.format_exc()))
        try:
            send.send(outcome)
        except Exception as e:  # noqa: BLE001 - what does not pickle still goes, as text
            where = outcome[1][1] if not outcome[0] else ""
            send.send((False, (RuntimeError(f"{type(e).__name__}: {e}"), where)))

    process = context.Process(target=child, name=f"torchbench: {getattr(work, '__name__', 'work')}")
    process.start()
    send.close()
    try:
        ok, value = receive.recv()
    except EOFError:
        ok, value = None, None
    finally:
        process.join()
        receive.close()
    if ok is None:
        code = process.exitcode
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit status {code}"
        raise RuntimeError(f"torchbench: the process running {getattr(work, '__name__', 'the work')} ended "
                           f"without a result ({how})")
    if ok:
        return value
    error, where = value
    error.add_note(f"in the forked process running {getattr(work, '__name__', 'the work')}:\n{where}")
    raise error


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
