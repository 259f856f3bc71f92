"""publish/forked.py: the pages' work in forked processes, as a publish inside `asv publish` runs it (a child
that gives its memory back, and per-label work on every core), with the outcome of running it here."""

import os
import signal

import numpy as np
import pytest

from torchbench.history import changepoints
from torchbench.publish import forked

pytestmark = pytest.mark.skipif(not forked.FORK, reason="forking is used on Linux only")


def _rss_mib() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024


def test_the_child_returns_its_result_and_its_memory_is_not_kept_here():
    before = _rss_mib()

    def allocate() -> tuple[int, float]:
        held = np.ones(50_000_000)  # 400 MB, touched
        return os.getpid(), float(held.sum())

    pid, total = forked.in_a_child(allocate)
    assert pid != os.getpid() and total == 50_000_000
    assert _rss_mib() - before < 50  # the 400 MB lived and died in the child


def test_a_childs_exception_is_raised_here_with_its_traceback():
    def fails() -> None:
        raise ValueError("bad cell in label x")

    with pytest.raises(ValueError, match="bad cell in label x") as raised:
        forked.in_a_child(fails)
    assert any("in the forked process running fails" in n and "ValueError" in n
               for n in raised.value.__notes__)


def test_a_child_that_dies_without_a_result_says_how_it_ended():
    with pytest.raises(RuntimeError, match=r"ended without a result \(exit status 7\)"):
        forked.in_a_child(lambda: os._exit(7))
    with pytest.raises(RuntimeError, match=rf"killed by signal {int(signal.SIGKILL)}"):
        forked.in_a_child(lambda: os.kill(os.getpid(), signal.SIGKILL))


def test_map_forked_keeps_the_order_uses_several_processes_and_raises_a_workers_exception():
    big = np.arange(1_000_000)  # inherited by the workers, never pickled

    def job(i: int) -> tuple[int, int]:
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
