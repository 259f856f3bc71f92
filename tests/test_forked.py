"""publish/forked.py: the pages' work in forked processes, as a publish inside `asv publish` runs it (a child
that gives its memory back, and per-label work on every core), with the outcome of running it here."""

import os
import time

import numpy as np
import pytest

from torchbench.history import changepoints
from torchbench.publish import forked

pytestmark = pytest.mark.skipif(not forked.FORK, reason="forking is used on Linux only")


def _rss_mib() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024


_taken: list = []  # what the helper's child has taken (its copy)


def _take(item) -> None:
    if item == "exit":
        os._exit(7)
    if item == "bad":
        raise ValueError("bad cell in file x")
    _taken.append(item)


def _finish(scale: int) -> tuple[int, list]:
    held = np.ones(50_000_000)  # 400 MB, touched: lives and dies in the child
    return os.getpid(), [x * scale for x in _taken] + [int(held.sum())]


def test_a_helper_takes_items_while_this_process_goes_on_and_gives_its_memory_back():
    before = _rss_mib()
    with forked.Helper(_take, _finish, "testing") as helper:
        for i in range(100):
            helper.put(i)
        pid, got = helper.finish(3)
    assert pid != os.getpid()
    assert got == [3 * i for i in range(100)] + [50_000_000]
    assert _taken == []  # taken there, not here
    assert _rss_mib() - before < 50


def test_a_helpers_exception_is_raised_by_finish_with_its_traceback():
    with forked.Helper(_take, _finish, "testing") as helper:
        helper.put(1)
        helper.put("bad")
        helper.put(2)  # not taken after the first exception; nothing hangs
        with pytest.raises(ValueError, match="bad cell in file x") as raised:
            helper.finish(1)
    assert any("in the forked process testing" in n and "ValueError" in n for n in raised.value.__notes__)

    def fails(scale):
        raise KeyError("no such label")

    with pytest.raises(KeyError, match="no such label"):
        forked.Helper(_take, fails, "testing").finish(1)


def test_a_helper_that_dies_says_how_it_ended_and_one_never_finished_ends_with_this_process_s_with():
    with forked.Helper(_take, _finish, "testing") as helper:
        helper.put("exit")
        for i in range(10):  # into a dead pipe: no error here
            helper.put(i)
        with pytest.raises(RuntimeError, match=r"the process testing ended without a result \(exit status 7\)"):
            helper.finish(1)
    with forked.Helper(_take, _finish, "testing") as helper:
        helper.put(1)
        child = helper._process
    assert not child.is_alive() and child.exitcode == 0


def test_a_helpers_backlog_counts_what_it_has_not_taken_yet_and_prepare_waits_for_a_free_moment():
    taken, prepared = [0], []  # the child's copies

    def take(item) -> None:
        time.sleep(0.05)
        taken[0] += 1

    def prepare() -> None:
        prepared.append(taken[0])  # what had been taken when it ran

    with forked.Helper(take, lambda: (taken[0], prepared), "testing", prepare=prepare) as helper:
        for i in range(10):
            helper.put(i)
        assert helper.backlog >= 5  # 10 put at once, each taken in 50 ms
        time.sleep(1.0)
        assert helper.backlog == 0
        done, when = helper.finish()
    # prepare ran once, at a moment nothing waited: before the first put when the child got there first (a
    # loaded machine: CI saw it), else between items; never twice
    assert done == 10 and len(when) == 1 and 0 <= when[0] <= 10


def test_map_forked_keeps_the_order_uses_several_processes_and_raises_a_workers_exception():
    big = np.arange(1_000_000)  # inherited by the workers, never pickled

    def job(i: int) -> tuple[int, int]:
        time.sleep(0.02)  # long enough that neither worker takes every chunk
        return int(big[i * 1000]), os.getpid()

    got = forked.map_forked(job, 40, workers=2)
    assert [v for v, _ in got] == [i * 1000 for i in range(40)]
    assert len({pid for _, pid in got} - {os.getpid()}) == 2

    def fails(i: int) -> int:
        if i == 17:
            raise KeyError("row 17")
        return i

    with pytest.raises(KeyError, match="row 17"):
        forked.map_forked(fails, 40, workers=2)
    assert forked.map_forked(job, 3, workers=1) == [(0, os.getpid()), (1000, os.getpid()), (2000, os.getpid())]


def test_the_change_point_search_on_every_core_finds_what_it_finds_in_order():
    rng = np.random.default_rng(3)
    histories = []
    for k in range(6):
        values = 1e-6 * np.exp(rng.normal(0, 0.02, 600))
        values[150 + 50 * k:] *= 1.25
        histories.append(changepoints.History("m", "env", f"b{k}", 0, f"b{k}", "seconds",
                                              [f"c{i}" for i in range(600)], values.tolist(), None))
    serial, parallel = changepoints.Windows(), changepoints.Windows()
    expected = changepoints.find_steps(histories, windows=serial)
    got = changepoints.find_steps(histories, windows=parallel, each=forked.map_forked)
    assert [(f.history.benchmark, f.step.at) for f in got] == [(f"b{k}", 150 + 50 * k) for k in range(6)]
    assert [f.to_dict() for f in got] == [f.to_dict() for f in expected]
    assert parallel.used == serial.used  # the windows come back from the workers, for the next publish
