"""System calls per call, by type, under strace (issue 50): the asv worker's `syscalls` mode."""

import json
import os
import shutil
import time
import subprocess
import sys

import pytest

from pathlib import Path

from torchbench.ab.counts_cache import CountsCache
from torchbench.ab.evidence import Evidence, JobInfo
from torchbench.ab.collect import collect_syscalls
from torchbench.ab.count_decision import COUNT_ALPHA
from torchbench_core.syscalls import CALLS, per_call, split_trace

from one_side import side_of, suite_of

SUITE = '''
import os

from torch.utils.benchmark import Timer

from torchbench_core.asv_suite import TimerSpec, TimerSuite


class Stmt(TimerSuite):
    timers = [TimerSpec("y = x + 1", setup="x = 1", label="plain", sub_label="int", description="add"),
              TimerSpec("y = x + 1\\nos.getpid()", setup="x = 1", globals={"os": os}, label="pid",
                        sub_label="int", description="add")]


class Methods:
    def setup(self):
        self.x = [1, 2, 3]

    def time_plain(self):
        sum(self.x)

    def time_stat(self):
        sum(self.x)
        os.stat(".")

    def track_value(self):
        return 1.0

    def track_timer(self):  # times a Timer: traced as that Timer's statement, as it is counted
        return Timer("os.getpid()", globals={"os": os}).timeit(10).mean
'''

STAT_CALLS = {"stat", "newfstatat", "fstatat64", "statx", "lstat"}


def test_split_trace_counts_calls_between_markers_of_every_thread():
    trace = "\n".join([
        '10 getpid() = 10',  # before any region
        '10 write(3, "TORCHBENCH_SYSCALLS 0 N start", 30) = 30',
        '10 getpid() = 10',
        '11 futex(0x7f, FUTEX_WAIT_PRIVATE, 0, NULL <unfinished ...>',
        '10 write(3, "TORCHBENCH_SYSCALLS 0 N end", 28) = 28',
        '11 <... futex resumed>) = 0',  # resumed: not a new call
        '10 write(3, "TORCHBENCH_SYSCALLS 0 2N start", 31) = 31',
        '10 getpid() = 10',
        '10 --- SIGALRM {si_signo=SIGALRM} ---',
        '10 getpid() = 10',
        '10 write(3, "TORCHBENCH_SYSCALLS 0 2N end", 29) = 29',
        'getpid() = 10',  # a trace without pids (one process)
    ])
    found = split_trace(trace)
    assert found[0]["N"] == {"getpid": 1, "futex": 1} and found[0]["2N"] == {"getpid": 2}
    result = per_call(found[0], 1)
    assert result["per_call"] == {"futex": 1 / 3, "getpid": 1.0} and not result["exact"]
    assert per_call({"N": {"getpid": 2}, "2N": {"getpid": 4}}, 2)["exact"]


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_one_more_system_call_a_call_is_exact(tmp_path):
    suite = suite_of(tmp_path, "bench_calls", SUITE)
    stmt = "bench_calls.Stmt.track_time"
    # TimerSuite's jobs: the product of label x sub_label x description x num_threads; index 0 is plain, 1 pid
    jobs = [[stmt, 0], [stmt, 1], ["bench_calls.Methods.time_plain", 0],
            ["bench_calls.Methods.time_stat", 0], ["bench_calls.Methods.track_value", 0],
            ["bench_calls.Methods.track_timer", 0], ["bench_calls.Gone", 0]]
    (tmp_path / "jobs.json").write_text(json.dumps(jobs))
    out = tmp_path / "out.json"
    subprocess.run([sys.executable, "-m", "torchbench_core.asv_worker", "syscalls", str(suite), "--jobs",
                    str(tmp_path / "jobs.json"), "--out", str(out)], check=True, env=dict(os.environ),
                   cwd=tmp_path, timeout=600)
    result = json.loads(out.read_text())
    plain, pid = result[f"{stmt}|0"]["syscalls"], result[f"{stmt}|1"]["syscalls"]
    assert plain == {"per_call": {}, "exact": True, "calls": CALLS, "regions": {"N": {}, "2N": {}}}
    assert pid["per_call"] == {"getpid": 1.0} and pid["exact"], pid
    assert pid["regions"] == {"N": {"getpid": CALLS}, "2N": {"getpid": 2 * CALLS}}
    # a time_ method, each call after asv's setup (which is not counted): os.stat is one more stat call
    method, stat = (result[f"bench_calls.Methods.{m}|0"]["syscalls"] for m in ("time_plain", "time_stat"))
    assert method["exact"] and stat["exact"], (method, stat)
    extra = {k: stat["per_call"].get(k, 0) - method["per_call"].get(k, 0) for k in {*stat["per_call"],
                                                                                    *method["per_call"]}}
    extra = {k: v for k, v in extra.items() if v}
    assert len(extra) == 1 and next(iter(extra)) in STAT_CALLS and next(iter(extra.values())) == 1.0, extra
    assert "uncountable" in result["bench_calls.Methods.track_value|0"]
    assert result["bench_calls.Methods.track_timer|0"]["syscalls"]["per_call"] == {"getpid": 1.0}
    assert "no such benchmark" in result["bench_calls.Gone|0"]["error"]


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_collect_syscalls_stores_each_sides_calls_in_the_evidence(tmp_path):
    suite, side = suite_of(tmp_path, "bench_calls", SUITE), side_of(tmp_path, "head")
    evidence = Evidence()
    jobs = [("bench_calls.Stmt.track_time", 1), ("bench_calls.Methods.track_value", 0)]
    for job in jobs:
        evidence.add_job(job, JobInfo(job[0]), "head")
    cache = CountsCache(tmp_path / "counts", Path(sys.executable), suite, None)
    tally = collect_syscalls(suite, side, jobs, evidence, cache=cache)
    assert tally == {"traced": 1, "cached": 0, "exact": 1, "untraceable": 1, "failed": 0, "late": 0}, evidence.notes
    assert evidence.syscalls["head"][jobs[0]]["per_call"] == {"getpid": 1.0}
    assert evidence.no_syscalls["head"][jobs[1]].startswith("not traceable: track_")
    assert evidence.to_dict()["syscalls"]["head"]["bench_calls.Stmt.track_time|1"]["exact"] is True
    # kept by commit beside the counts: the same commit is read back, not traced again (a mark put in the
    # cache file comes back; a trace would say 1 getpid a call)
    path = cache.path(side.commit)
    kept = json.loads(path.read_text())
    (case,) = [c for c in kept["syscalls"] if c.startswith("bench_calls.Stmt.track_time|1|")]
    kept["syscalls"][case]["syscalls"]["per_call"] = {"getpid": 7.0}
    path.write_text(json.dumps(kept))
    again = Evidence()
    for job in jobs:
        again.add_job(job, JobInfo(job[0]), "head")
    tally = collect_syscalls(suite, side, jobs, again, cache=CountsCache(tmp_path / "counts", Path(sys.executable),
                                                                          suite, None))
    assert tally == {"traced": 0, "cached": 2, "exact": 1, "untraceable": 1, "failed": 0, "late": 0}, again.notes
    assert again.syscalls["head"][jobs[0]]["per_call"] == {"getpid": 7.0}
    assert again.no_syscalls["head"] == evidence.no_syscalls["head"]


SLOW_SETUP = '''
import os
import time


class Rows:
    def time_first(self):
        os.getpid()

    def time_last(self):
        os.getpid()


class Slow:
    def setup(self):
        time.sleep(120)  # a set-up that outlasts the phase (a suite's 15 s forward pass, many times over)

    def time_slow(self):
        os.getpid()
'''


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_a_row_whose_setup_outlasts_its_share_costs_itself_alone(tmp_path):
    """Issue 63: the system-call phase has its share of the budget, and each row its share of what is left.
    A row whose set-up alone outlasts it is stopped and left to wall time, with that reason; the rows before
    and after it are traced, and the phase ends within its share (not after the set-up's 120 s)."""
    suite, side = suite_of(tmp_path, "bench_slow", SLOW_SETUP), side_of(tmp_path, "head")
    evidence = Evidence()
    jobs = [("bench_slow.Rows.time_first", 0), ("bench_slow.Slow.time_slow", 0), ("bench_slow.Rows.time_last", 0)]
    for job in jobs:
        evidence.add_job(job, JobInfo(job[0]), "head")
    began = time.monotonic()
    tally = collect_syscalls(suite, side, jobs, evidence, timeout=40)
    took = time.monotonic() - began
    assert took < 45, took
    assert tally["traced"] == 2 and tally["late"] == 1, (tally, evidence.notes, evidence.no_syscalls)
    assert set(evidence.syscalls["head"]) == {jobs[0], jobs[2]}
    assert evidence.syscalls["head"][jobs[2]]["per_call"].get("getpid") == 1.0
    assert evidence.no_syscalls["head"][jobs[1]].startswith("not traced: its set-up and calls outlasted its share")
    assert any("1 row(s) not traced within the phase's share" in note for note in evidence.notes), evidence.notes


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_a_getpid_added_to_every_call_is_decided_from_real_repeat_traces(tmp_path):
    """Two real traces a side (the first, and a repeat trace in another layout with the rows in reverse order):
    the statement with a getpid more a call against the same statement without it is decided by system
    calls, getpid +1 a call; the repeat trace is kept apart from the first in the cache."""
    from torchbench.ab.channels import SYSCALLS, SystemCalls, syscall_moves

    suite, side = suite_of(tmp_path, "bench_calls", SUITE), side_of(tmp_path, "head")
    stmt = "bench_calls.Stmt.track_time"
    jobs = [(stmt, 0), (stmt, 1), ("bench_calls.Methods.time_plain", 0)]
    evidence = Evidence()
    for job in jobs:
        evidence.add_job(job, JobInfo(job[0]), "head")
    cache = CountsCache(tmp_path / "counts", Path(sys.executable), suite, None)
    collect_syscalls(suite, side, jobs, evidence, cache=cache)
    tally = collect_syscalls(suite, side, jobs, evidence, cache=cache, repeat=1)
    assert tally["traced"] == 3 and tally["cached"] == 0, (tally, evidence.notes)
    assert [t["per_call"] for t in evidence.syscalls_again["head"][(stmt, 1)]] == [{"getpid": 1.0}]
    assert evidence.to_dict()["syscalls_again"]["head"][f"{stmt}|1"][0]["exact"] is True
    # the row without the getpid as the base, the row with it as the head, each with both its traces
    pair = Evidence()
    pair.jobs[(stmt, 0)] = JobInfo(stmt, on_base=True, on_head=True)
    for side_name, job in (("base", (stmt, 0)), ("head", (stmt, 1))):
        pair.syscalls[side_name][(stmt, 0)] = evidence.syscalls["head"][job]
        pair.syscalls_again[side_name][(stmt, 0)] = evidence.syscalls_again["head"][job]
    assert syscall_moves(pair, (stmt, 0)) == {"getpid": {"change": 1.0, "decides": True, "why": ""}}
    found = SystemCalls().test(pair, (stmt, 0), 0.01, {}, COUNT_ALPHA)
    assert found.channel == SYSCALLS and found.decides and found.label == "system calls: getpid +1 a call"
    # the first trace alone does not decide: the repeat is what makes the call a call of the code
    pair.syscalls_again = {"base": {}, "head": {}}
    assert not SystemCalls().test(pair, (stmt, 0), 0.01, {}, COUNT_ALPHA).decides
    # read back from the cache, the repeat trace is not traced again
    again = Evidence()
    for job in jobs:
        again.add_job(job, JobInfo(job[0]), "head")
    tally = collect_syscalls(suite, side, jobs, again, cache=CountsCache(tmp_path / "counts", Path(sys.executable),
                                                                          suite, None), repeat=1)
    assert tally["traced"] == 0 and tally["cached"] == 3
    assert again.syscalls_again["head"][(stmt, 1)] == evidence.syscalls_again["head"][(stmt, 1)]
    assert not again.syscalls["head"]  # a repeat trace is not a first trace
