"""A round's processes (torchbench/ab/rounds.py). Duet rounds (`torchbench alert --design duet`): base and
head processes at once, one core each, meeting before every case's timing; a partner that dies releases the
other (the worker's Meeting in torchbench_core/asv_worker.py). Either design: asv's setup_cache once a side.

Real worker processes on a tiny asv suite whose two sides are two installs of a module that says how long
each case's setup sleeps, so that without the meeting the two processes would start a case's timing up to
0.8 s apart.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from torchbench import tools
from torchbench.ab.collect import collect_counts, plan_counts
from torchbench.ab.evidence import Evidence, JobInfo, Side
from torchbench.ab.options import Policy, Rounds
from torchbench.ab.rounds import _duet, _one_process, duet_cores
from torchbench.errors import UserError

SUITE = '''
import os
import time

import delays


class Cached:
    def setup_cache(self):
        return delays.SETUP  # each side's own value

    def track_cached(self, cache):
        return cache[1]


class Made:
    def setup_cache(self):
        with open(delays.LOG, "a") as f:  # one line each time the value is made
            f.write(f"{os.getpid()}\\n")
        return 1

    def time_read(self, cache):
        pass


class Meet:
    params = [0, 1, 2]

    def setup(self, i):
        if delays.DIE_AT == i:
            os._exit(3)
        time.sleep(delays.SETUP[i])

    def track_start(self, i):
        return time.time()  # when the timed part began, on the wall clock both processes share

    def track_core(self, i):
        (core,) = os.sched_getaffinity(0)  # pinned to one core: unpacks only if there is exactly one
        return core
'''

needs_two_cores = pytest.mark.skipif(duet_cores() is None, reason="duet rounds need two usable cores")


def _sides(tmp_path: Path, head_dies_at: int | None = None) -> tuple[Path, dict[str, Side]]:
    suite = tmp_path / "benchmarks"
    suite.mkdir()
    (suite / "__init__.py").write_text("")
    (suite / "bench_meet.py").write_text(SUITE)
    sides = {}
    for name, setup, dies in (("base", [0.8, 0.0, 0.8], None), ("head", [0.0, 0.8, 0.0], head_dies_at)):
        install = tmp_path / name
        install.mkdir()
        log = str(tmp_path / f"{name}.log")  # one line each time Made's setup_cache runs
        (install / "delays.py").write_text(f"SETUP = {setup}\nDIE_AT = {dies}\nLOG = {log!r}\n")
        sides[name] = Side(name, name, install, Path(sys.executable))
    return suite, sides


def _jobs(kind: str) -> list[tuple[str, int]]:
    return [(f"bench_meet.Meet.track_{kind}", i) for i in range(3)]


@needs_two_cores
def test_a_duet_starts_every_case_of_both_sides_together_each_on_its_own_core(tmp_path):
    suite, sides = _sides(tmp_path)
    jobs = _jobs("start") + _jobs("core")
    found = _duet(suite, sides, ("head", "base"), jobs, tmp_path / "cache", 120, {}, duet_cores())
    (base, died_base), (head, died_head) = found["base"], found["head"]
    assert died_base is None and died_head is None
    for job in _jobs("start"):  # setups 0.8 s apart, timing begun within a few ms of each other
        assert abs(base[job]["value"] - head[job]["value"]) < 0.2, (job, base[job], head[job])
    cores = duet_cores()
    for job in _jobs("core"):  # head asked for the first core, base got the second
        assert (head[job]["value"], base[job]["value"]) == cores


@needs_two_cores
def test_a_partner_that_dies_releases_the_other_and_is_named(tmp_path):
    suite, sides = _sides(tmp_path, head_dies_at=1)
    started = time.monotonic()
    found = _duet(suite, sides, ("base", "head"), _jobs("start"), tmp_path / "cache", 60, {}, duet_cores())
    assert time.monotonic() - started < 30  # nobody waited on a meeting that never comes
    (base, died_base), (head, died_head) = found["base"], found["head"]
    assert died_base is None and set(base) == set(_jobs("start"))  # the base measured every case
    assert "exit status 3" in died_head and "exit status 3" in head[_jobs("start")[1]]["error"]


def test_the_design_is_checked_and_one_core_alternates(tmp_path):
    with pytest.raises(UserError, match="schedule must be alternating or duet"):
        Rounds(schedule="trio")
    pid = os.fork()
    if pid == 0:  # a child pinned to one core sees no duet
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        os._exit(0 if duet_cores() is None else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_setup_cache_is_each_sides_own_though_its_key_is_the_same(tmp_path):
    """asv keys setup_cache by the function's place in the suite, the same on both sides; a value shared
    between them made the head measure with the base's (a C++ program built against the base's torch)."""
    suite, sides = _sides(tmp_path)
    job = ("bench_meet.Cached.track_cached", 0)
    for name, expected in (("base", 0.0), ("head", 0.8), ("base", 0.0)):  # base first, so its value exists
        results, died = _one_process(suite, sides[name], [job], tmp_path / "cache", 120, {})
        assert died is None and results[job]["value"] == expected, (name, results)


@pytest.mark.skipif(tools.find("valgrind") is None, reason="counts need valgrind")
def test_a_sides_setup_cache_is_made_once_for_its_plan_its_counts_and_its_rounds(tmp_path):
    suite, sides = _sides(tmp_path)
    job, cache_dir = ("bench_meet.Made.time_read", 0), tmp_path / "cache"
    evidence = Evidence()
    evidence.add_job(job, JobInfo("bench_meet.Made.time_read", by_call=True), "base")
    made = plan_counts(suite, [sides["base"]], [job], cache_dir)
    assert not made.problems and job in made.plans and made.setups[job] >= 0
    tally = collect_counts(suite, sides["base"], [job], evidence, plans=made.plans, cache_dir=cache_dir)
    assert tally["counted"] == 1 and evidence.counts["base"][job], evidence.notes
    results, died = _one_process(suite, sides["base"], [job], cache_dir, 120, {})
    assert died is None and results[job]["samples"], results
    made = (tmp_path / "base.log").read_text().split()
    assert len(made) == 1, made  # natively, by the plan: the counts and the rounds read its value


@pytest.mark.skipif(tools.find("valgrind") is None, reason="counts need valgrind")
def test_counting_stops_at_its_share_of_the_budget_and_its_rows_keep_their_wall_time(tmp_path):
    """Rounds.count_share: the valgrind processes get what is left of the counting's share as their timeout
    (here none: the share is spent), so their rows are left without counts, saying why, and no jittered pass
    starts; without the share a counting process could take the whole budget (it was given an hour)."""
    from torchbench.ab.schedule import count_both

    suite, sides = _sides(tmp_path)
    job = ("bench_meet.Made.time_read", 0)
    evidence = Evidence()
    for name in sides:
        evidence.add_job(job, JobInfo("bench_meet.Made.time_read", by_call=True), name)
    started = time.monotonic()
    count_both(tmp_path / "counts", tools.find("valgrind"), suite, sides, [job], evidence, Policy(count_floor=0.01),
                tmp_path / "cache", deadline=time.monotonic() - 1)
    assert time.monotonic() - started < 60  # a valgrind process alone takes longer than its 1 s
    assert not evidence.counts["base"] and not evidence.counts_again["base"]
    assert all("took over 1 s" in evidence.uncounted[name][job] for name in sides), evidence.uncounted
    assert all(t["counted"] == 0 and t["confirmed"] == 0 for t in evidence.count_tally.values())


def test_the_first_counting_processes_leave_time_to_confirm_their_candidates(tmp_path, monkeypatch):
    """schedule.FIRST_SHARE: the first valgrind processes may take 60% of the counting's share, the jittered ones
    that confirm the rows whose counts moved get the rest (when the first processes took the whole share, a
    +9.5% change's rows were never confirmed: issue 63). The processes are recorded, not run: what is checked
    is the time each pass is given."""
    from torchbench.ab import collect, schedule

    suite, sides = _sides(tmp_path)
    job = ("bench_meet.Made.time_read", 0)
    evidence = Evidence()
    for name in sides:
        evidence.add_job(job, JobInfo("bench_meet.Made.time_read", by_call=True), name)
    given = []

    def counted(suite, side, todo, evidence, cache=None, jitter=0, timeout=0.0, **_):
        given.append((side.name, jitter, timeout))
        moved = 1.0 if side.name == "base" else 1.2  # a row whose first counts moved 20%
        if jitter:
            evidence.counts_again[side.name].setdefault(job, []).extend([[moved]] * 8)
        else:
            evidence.counts[side.name][job] = [moved] * 3
        return {"counted": 1, "cached": 0, "uncountable": 0, "failed": 0}

    monkeypatch.setattr(collect, "collect_counts", counted)
    share = 100.0
    schedule.count_both(tmp_path / "counts", tools.find("valgrind") or Path("valgrind"), suite, sides, [job], evidence,
                     Policy(count_floor=0.01), tmp_path / "cache", deadline=time.monotonic() + share)
    first = [t for _, jitter, t in given if jitter == 0]
    confirming = [t for _, jitter, t in given if jitter == 1]
    assert len(first) == 2 and all(schedule.FIRST_SHARE * share - 5 < t <= schedule.FIRST_SHARE * share for t in first), given
    assert len(confirming) == 2 and all(t > (1 - schedule.FIRST_SHARE) * share for t in confirming), given


def test_a_row_whose_first_counts_moved_is_confirmed_while_the_first_processes_count_the_rest(tmp_path, monkeypatch):
    """schedule._Confirming: the first row's first counts move on both sides; its jittered processes start
    while the first processes still count the other rows, not after them (a suite whose first processes took
    the share confirmed none of its candidates: issue 63), and each of its rows is confirmed once. A row that
    did not move is not confirmed. The processes are recorded, not run: what is checked is when each starts."""
    from torchbench.ab import collect, schedule

    suite, sides = _sides(tmp_path)
    moved, flat, last = (("bench_meet.Made.time_read", i) for i in range(3))
    evidence = Evidence()
    for name in sides:
        for job in (moved, flat, last):
            evidence.add_job(job, JobInfo(job[0], by_call=True), name)
    events = []

    def counted(suite, side, todo, evidence, cache=None, jitter=0, on_row=None, **_):
        events.append((side.name, jitter, "start", time.monotonic()))
        if jitter:
            for job in todo:
                evidence.counts_again[side.name].setdefault(job, []).extend([[1.0]] * 8)
        else:
            for job in todo:  # a row's first counts as the process counts it, the moved one first
                evidence.counts[side.name][job] = [1.2 if side.name == "head" and job == moved else 1.0] * 3
                on_row(job)
                time.sleep(1.0)
        events.append((side.name, jitter, "end", time.monotonic()))
        return {"counted": len(todo), "cached": 0, "uncountable": 0, "failed": 0}

    monkeypatch.setattr(collect, "collect_counts", counted)
    monkeypatch.setattr(schedule, "GATHER_SECONDS", 0.5)  # (15 s here: rows that move together, one process)
    schedule.count_both(tmp_path / "counts", tools.find("valgrind") or Path("valgrind"), suite, sides,
                        [moved, flat, last], evidence, Policy(count_floor=0.01), tmp_path / "cache",
                        deadline=time.monotonic() + 100)
    first_end = min(t for _, jitter, what, t in events if jitter == 0 and what == "end")
    confirming = [t for _, jitter, what, t in events if jitter == 1 and what == "start"]
    assert len(confirming) == 2 and max(confirming) < first_end - 1.0, events  # beside the first processes
    assert {job for job in (moved, flat, last) if evidence.counts_again["base"].get(job)} == {moved}
    assert all(t["confirmed"] == 1 for t in evidence.count_tally.values()), evidence.count_tally


SLOW_SETUP = '''
import time


class Slow:
    def setup(self):
        time.sleep(0.3)  # a setup that dwarfs its call: a round costs seconds, as a 15 s forward pass costs minutes

    def time_call(self):
        pass
'''


def test_the_budget_ends_the_default_rounds_within_a_round_of_its_end_whatever_a_round_costs(tmp_path):
    """Issue 63: by default the rounds go on past the budget until every row can reach its bar (6 rounds at
    least); where a round costs so much that those rounds outlast the budget by more than a round (a suite
    whose setups run a 15 s forward pass: 3 minutes a round, 6 of them in a 4-minute budget), the budget ends
    them after the round in progress, and the notes say so and what budget would hold them; a row with one
    process a side is then undecided, not failed."""
    from one_side import side_of, suite_of
    from torchbench.ab.rounds import measure_rounds

    suite = suite_of(tmp_path, "bench_slow", SLOW_SETUP)
    sides = {name: side_of(tmp_path, name) for name in ("base", "head")}
    job = ("bench_slow.Slow.time_call", 0)
    evidence = Evidence()
    for name in sides:
        evidence.add_job(job, JobInfo("bench_slow.Slow.time_call"), name)
    rounds = Rounds(budget_minutes=0.05, counts=False, schedule="alternating")
    assert rounds.until_reachable and rounds.min_rounds >= 6  # the defaults: rounds until the bar is reachable
    # a round (two processes, each running the setup 3-4 times) ends past this deadline, whatever the machine's
    # speed: one that ended before it would rightly start another (3 s let a fast CI machine run two)
    measure_rounds(suite, sides, [job], evidence, rounds=rounds, policy=Policy(), deadline=time.monotonic() + 0.5,
                   cache_dir=tmp_path / "cache")
    assert evidence.round_seconds[0] > 0.5, evidence.round_seconds
    assert evidence.rounds == 1 and len(evidence.values["base"][job]) == 1, evidence.rounds
    (note,) = [n for n in evidence.notes if "the budget holds 1 round(s)" in n]
    assert "--budget-minutes" in note and "to reach its bar" in note, note
    # one process a side and nothing failed: undecided, saying why, not a failure (exit 2)
    from torchbench.ab.verdict import decide
    from torchbench.stats import INCONCLUSIVE

    (row,) = decide(evidence, Policy())
    assert row.status == INCONCLUSIVE and "the budget held one round" in row.error, row
