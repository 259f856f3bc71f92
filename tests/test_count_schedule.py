"""The deterministic channels' schedule (torchbench/ab/schedule.py, collect.py) on a suite whose setups cost
what a real suite's can (issue 63: a setup that runs a 15 s forward pass cannot be counted in a budget, and
rows counted before it were lost with it). Real worker and valgrind processes on a tiny asv suite: two light
rows and rows whose setup sleeps (what valgrind cannot speed up either), each setup run logged to a file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from torchbench import tools
from torchbench.ab.collect import SLOW_SETUP, collect_counts
from torchbench.ab.counts_cache import CountsCache
from torchbench.ab.evidence import Evidence, JobInfo, Side
from torchbench.ab.options import Policy
from torchbench.ab.schedule import FIRST_SHARE, VALGRIND_SLOWDOWN_FLOOR, count_both

needs_valgrind = pytest.mark.skipif(tools.find("valgrind") is None, reason="counts need valgrind")

SUITE = '''
import time

LOG = {log!r}


class Light:
    params = [0, 1]

    def time_sum(self, i):
        sum(range(100 + i))


class Slow:
    def setup(self):
        with open(LOG, "a") as f:  # one line each time this setup runs
            f.write("slow\\n")
        time.sleep({slow})

    def time_sum(self):
        sum(range(100))


class Later:
    def setup(self):
        time.sleep({later})

    def time_sum(self):
        sum(range(100))
'''
LIGHT = [("bench_setups.Light.time_sum", 0), ("bench_setups.Light.time_sum", 1)]
SLOW, LATER = ("bench_setups.Slow.time_sum", 0), ("bench_setups.Later.time_sum", 0)


def _suite(tmp_path: Path, slow: float, later: float) -> tuple[Path, dict[str, Side], Evidence]:
    suite = tmp_path / "benchmarks"
    suite.mkdir()
    (suite / "__init__.py").write_text("")
    (suite / "bench_setups.py").write_text(SUITE.format(log=str(tmp_path / "setups.log"), slow=slow, later=later))
    sides = {}
    for name in ("base", "head"):
        (tmp_path / name).mkdir()
        sides[name] = Side(name, name, tmp_path / name, Path(sys.executable))
    evidence = Evidence()
    for job in [*LIGHT, SLOW, LATER]:
        for name in sides:
            evidence.add_job(job, JobInfo(job[0], params=[str(job[1])] if job in LIGHT else [], by_call=True), name)
    return suite, sides, evidence


@needs_valgrind
def test_a_row_whose_setup_alone_outlasts_the_counting_share_is_left_to_wall_time_before_valgrind(tmp_path):
    """A 120 s counting share: the first processes may run 96 s, so a setup of 2 s natively (100 s or more under
    valgrind) cannot be counted. Its setup runs once, natively, to time it (not again to plan it, and never
    under valgrind), it gets that reason on both sides, and the light rows are counted on both; the kept
    setup seconds spare it the next commit's planning too."""
    suite, sides, evidence = _suite(tmp_path, slow=2.0, later=0.0)
    assert 2.0 > FIRST_SHARE * 120 / VALGRIND_SLOWDOWN_FLOOR  # (what the test is about)
    jobs = [*LIGHT, SLOW]
    count_both(tmp_path / "counts", tools.find("valgrind"), suite, sides, jobs, evidence,
               Policy(count_floor=0.01), tmp_path / "cache", deadline=time.monotonic() + 120)
    for name in sides:
        assert all(evidence.counts[name].get(job) for job in LIGHT), (name, evidence.uncounted, evidence.notes)
        assert SLOW not in evidence.counts[name]
        assert evidence.uncounted[name][SLOW].startswith("not counted: its set-up takes 2.0 s natively"), \
            evidence.uncounted
    assert any("1 row(s) left to wall time before counting" in note for note in evidence.notes), evidence.notes
    assert (tmp_path / "setups.log").read_text().split() == ["slow"]  # timed once, natively; never planned
    kept = json.loads(next((tmp_path / "counts" / "plans").glob("*.json")).read_text())
    assert not any("Slow" in case for case in kept["plans"]) and any("Slow" in case for case in kept["setups"])

    again = Evidence()  # a later commit of the same suite: the kept seconds say so without running it
    for job in jobs:
        for name in sides:
            again.add_job(job, JobInfo(job[0], params=[str(job[1])] if job in LIGHT else [], by_call=True), name)
    count_both(tmp_path / "counts", tools.find("valgrind"), suite, sides, jobs, again,
               Policy(count_floor=0.01), tmp_path / "cache", deadline=time.monotonic() + 120)
    assert (tmp_path / "setups.log").read_text().split() == ["slow"]
    assert all(again.uncounted[name][SLOW].startswith("not counted: its set-up") for name in sides)


def _descendants(pid: int) -> list[int]:
    """Every living process under `pid` (from /proc: the counting worker and the valgrind process it started)."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        children = [child for child, p in parents.items() if p == parent]
        found += children
        todo += children
    return found


@needs_valgrind
def test_a_slow_setups_row_is_counted_last_and_a_stopped_process_keeps_the_rows_it_counted(tmp_path):
    """Rows whose setup takes SLOW_SETUP or more natively are counted after the others, so a process stopped
    while it counts them (here killed, with its valgrind process, once two rows are in: a Ctrl-C, the OOM
    killer, a time-out) has counted the quick ones; those keep their counts, in the evidence and the cache,
    and the row it was counting says why it has none."""
    suite, sides, evidence = _suite(tmp_path, slow=0.0, later=3.0)
    assert 3.0 >= SLOW_SETUP
    order: list = []

    def stop_after_two(job) -> None:
        order.append(job)
        if len(order) == 2:
            for pid in _descendants(os.getpid()):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    side = sides["base"]
    cache = CountsCache(tmp_path / "counts", side.python, suite, tools.find("valgrind"))
    tally = collect_counts(suite, side, [LATER, *LIGHT], evidence, cache, cache_dir=tmp_path / "cache",
                           setups={LATER: 3.0}, on_row=stop_after_two)
    assert order == LIGHT  # the row with the slow setup was left for last, and never reached
    assert all(evidence.counts["base"].get(job) for job in LIGHT) and tally["counted"] == 2, (tally, evidence.notes)
    assert LATER not in evidence.counts["base"] and evidence.uncounted["base"][LATER].startswith("counting failed")
    assert len(cache.load(side.commit)) == 2  # kept: a later alert does not count them again


def test_a_call_of_a_tenth_of_a_millisecond_or_more_warms_up_eight_calls(tmp_path):
    """asv_worker.SHORT_WARMUP_CALL: a row whose call takes 0.1 ms or more natively is planned to 8 warm-up
    calls (a layer's kernels run 500-1300x slower under valgrind, and its counts moved at most 0.05% between 8
    and 16-32 warm-up calls), a 10 us row to WARMUP_SECONDS of calls (128): its interpreted part specialises
    over many more calls. Each plan carries its setup's seconds."""
    suite = tmp_path / "benchmarks"
    suite.mkdir()
    (suite / "__init__.py").write_text("")
    (suite / "bench_calls.py").write_text(
        "import time\n\n\nclass Calls:\n    def time_short(self):\n        sum(range(300))\n\n"
        "    def time_long(self):\n        time.sleep(0.0004)\n")
    jobs, out = tmp_path / "jobs.json", tmp_path / "plans.json"
    jobs.write_text(json.dumps([["bench_calls.Calls.time_short", 0], ["bench_calls.Calls.time_long", 0]]))
    proc = subprocess.run([sys.executable, "-m", "torchbench_core.asv_worker", "plan", str(suite), "--jobs",
                           str(jobs), "--out", str(out)], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1])))
    assert proc.returncode == 0, proc.stderr
    plans = json.loads(out.read_text())
    assert plans["bench_calls.Calls.time_long|0"]["plan"][1] == 8, plans
    assert plans["bench_calls.Calls.time_short|0"]["plan"][1] == 128, plans
    assert all(0 <= plan["setup"] < 1 for plan in plans.values()), plans


PLANNED_SUITE = '''
import os

LOG = {log!r}


class Rows:
    params = [0, 1]

    def setup(self, i):
        with open(LOG, "a") as f:  # where each setup ran: natively, or under valgrind (its preload)
            f.write(f"{{i}} {{'valgrind' if 'vgpreload' in os.environ.get('LD_PRELOAD', '') else 'native'}}\\n")

    def time_sum(self, i):
        sum(range(100))
'''


@needs_valgrind
def test_a_row_planned_call_by_call_is_not_run_natively_again_before_valgrind(tmp_path):
    """A `time_` row whose plan (made natively, once, by the base's code) counts it call by call carries that
    to the counting worker, which then does not run its setup and method natively to find out whether it
    times a Timer (a heavy setup ran once more a side for nothing); a row without a plan still is, to plan
    it. Both are counted under valgrind."""
    suite = tmp_path / "benchmarks"
    suite.mkdir()
    (suite / "__init__.py").write_text("")
    log = tmp_path / "setups.log"
    (suite / "bench_rows.py").write_text(PLANNED_SUITE.format(log=str(log)))
    planned, unplanned = ("bench_rows.Rows.time_sum", 0), ("bench_rows.Rows.time_sum", 1)
    evidence = Evidence()
    for job in (planned, unplanned):
        evidence.add_job(job, JobInfo(job[0], params=[str(job[1])], by_call=True), "base")
    side = Side("base", "base", tmp_path, Path(sys.executable))
    tally = collect_counts(suite, side, [planned, unplanned], evidence, plans={planned: (4, 8)},
                           cache_dir=tmp_path / "cache")
    assert tally["counted"] == 2 and all(evidence.counts["base"].get(job) for job in (planned, unplanned)), tally
    ran = log.read_text().split("\n")
    assert "0 native" not in ran and "0 valgrind" in ran, ran  # the planned row: under valgrind alone
    assert "1 native" in ran and "1 valgrind" in ran, ran
