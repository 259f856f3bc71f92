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
import threading
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


def _confirming_trial(tmp_path, monkeypatch, cores: int, share: float, rows: int = 3, row_seconds: float = 1.0,
                      moving: tuple[int, ...] = (0,), cached: tuple[str, ...] = (), pass_seconds: float = 0.0,
                      go_on: bool = False, startup: float = 0.0, confirm: float = 0.0):
    """count_both on `rows` rows whose first processes take `row_seconds` a row, those at `moving` moved 20% on
    the head, on a machine of `cores` cores, the counting's share `share` seconds. The processes are recorded,
    not run (collect.collect_counts replaced): the events (side, jitter, start or end, when, simulate), the
    rows and the evidence. The sides in `cached` have their first counts at once (from the cache, as a base a
    nightly run counted); a jittered process takes `pass_seconds`. `go_on`: a first process that counted every
    row asks `then()` for more, as a real one does (collect.Continued: events (side, jitter, "went on", when,
    rows), their draws placed as a jittered process's, the head's 20% more on the moved rows). `startup`: the
    seconds before a first process's first row (a valgrind process's start-up). `confirm`: the seconds past the
    share the candidates' confirmation may take (Rounds.confirm_share)."""
    from torchbench.ab import collect, schedule

    suite, sides = _sides(tmp_path)
    jobs = [("bench_meet.Made.time_read", i) for i in range(rows)]
    evidence = Evidence()
    for name in sides:
        for job in jobs:
            evidence.add_job(job, JobInfo(job[0], by_call=True), name)
    events = []
    lockstep = threading.Barrier(2) if not cached else None

    def counted(suite, side, todo, evidence, cache=None, jitter=0, on_row=None, simulate=True, then=None, **_):
        events.append((side.name, jitter, "start", time.monotonic(), simulate))
        went_on = set()
        if jitter:
            time.sleep(pass_seconds)
            for job in todo:
                evidence.counts_again[side.name].setdefault(job, []).extend([[1.0]] * 8)
        else:
            time.sleep(0 if side.name in cached or not todo else startup)
            for job in todo:  # a row's first counts as the process counts it
                time.sleep(0 if side.name in cached else row_seconds)
                if lockstep:  # both sides count the same rows alike: a loaded machine does not part them
                    lockstep.wait(timeout=60)
                evidence.counts[side.name][job] = [1.2 if side.name == "head" and job[1] in moving else 1.0] * 3
                on_row(job)
            while go_on and side.name not in cached and (more := then()) is not None:
                events.append((side.name, more.jitter, "went on", time.monotonic(), tuple(more.jobs)))
                time.sleep(pass_seconds)
                for job in more.jobs:
                    value = 1.2 if side.name == "head" and job[1] in moving else 1.0
                    evidence.counts_again[side.name].setdefault(job, []).extend([[value * (1 + k / 1e4)] for k in
                                                                                range(more.draws)])
                went_on.update(more.jobs)
        events.append((side.name, jitter, "end", time.monotonic(), simulate))
        return {"counted": len(todo), "cached": 0, "uncountable": 0, "failed": 0, "continued": len(went_on)}

    monkeypatch.setattr(collect, "collect_counts", counted)
    # no plans: the recorded processes read none, and a real plan worker (the suite's 0.8 s setups, torch's
    # import) took 3-4 s of the share on a slower machine before the first process started
    monkeypatch.setattr(schedule, "count_plans", lambda *args, **kwargs: ({}, {}))
    monkeypatch.setattr(schedule, "GATHER_SECONDS", 0.5)  # (15 s here: rows that move together, one process)
    monkeypatch.setattr(schedule, "_cores", lambda: cores)
    schedule.count_both(tmp_path / "counts", tools.find("valgrind") or Path("valgrind"), suite, sides, jobs, evidence,
                        Policy(count_floor=0.01), tmp_path / "cache", deadline=time.monotonic() + share,
                        confirm_until=time.monotonic() + share + confirm)
    return events, jobs, evidence


def test_with_cores_to_spare_a_row_whose_first_counts_moved_is_confirmed_while_the_first_processes_count(
        tmp_path, monkeypatch):
    """schedule._Confirming on four cores: the first row's first counts move on both sides; its jittered
    processes start while the first processes still count the other rows, not after them (a suite whose first
    processes took the share confirmed none of its candidates: issue 63), and each of its rows is confirmed
    once. A row that did not move is not confirmed."""
    events, (moved, flat, last), evidence = _confirming_trial(tmp_path, monkeypatch, cores=4, share=100)
    first_end = min(t for _, jitter, what, t, _ in events if jitter == 0 and what == "end")
    confirming = [t for _, jitter, what, t, _ in events if jitter == 1 and what == "start"]
    assert len(confirming) == 2 and max(confirming) < first_end - 1.0, events  # beside the first processes
    assert {job for job in (moved, flat, last) if evidence.counts_again["base"].get(job)} == {moved}
    assert all(t["confirmed"] == 1 for t in evidence.count_tally.values()), evidence.count_tally


def test_on_two_cores_the_rows_that_moved_are_confirmed_in_one_pass_after_the_first_processes(tmp_path, monkeypatch):
    """schedule._Confirming on two cores, the first processes filling them, with time to spare: the two rows
    that moved (the first and the third of four) wait for the first processes' end and are confirmed in one
    jittered process a side (one valgrind start-up, and no core running two valgrind processes: confirming
    beside them cost einops' slowed pair a third more of its counting). The pass counts without simulating
    caches and branches: the rows' counts moved, which simulated cycles do not decide (channels.simulating)."""
    events, jobs, evidence = _confirming_trial(tmp_path, monkeypatch, cores=2, share=100, rows=4, row_seconds=0.5,
                                               moving=(0, 2))
    first_end = min(t for _, jitter, what, t, _ in events if jitter == 0 and what == "end")
    confirming = [(t, simulate) for _, jitter, what, t, simulate in events if jitter == 1 and what == "start"]
    assert len(confirming) == 2 and min(t for t, _ in confirming) >= first_end, events  # one pass, after them
    assert {job for job in jobs if evidence.counts_again["head"].get(job)} == {jobs[0], jobs[2]}
    assert all(t["confirmed"] == 2 for t in evidence.count_tally.values()), evidence.count_tally
    assert not any(simulate for _, simulate in confirming), events


def test_on_two_cores_the_first_processes_go_on_with_the_rows_that_moved_instead_of_starting_a_pass(
        tmp_path, monkeypatch):
    """Issue 63, "start-up is paid once per side": on two cores, once both first processes have counted every
    row, the rows whose first counts moved (the first and third of four) are counted again in them, the same
    rows a side, as their first jittered process (collect.Continued: jitter 1, count_decision.DRAWS draws): no
    valgrind process is started for them. Their draws decide them (the head's 20% more in every layout), so
    no second pass follows, and the tally counts them confirmed."""
    from torchbench.ab.count_decision import DRAWS

    events, jobs, evidence = _confirming_trial(tmp_path, monkeypatch, cores=2, share=100, rows=4, row_seconds=0.3,
                                               moving=(1, 3), go_on=True, startup=2.0)
    went_on = [(side, jitter, rows) for side, jitter, what, _, rows in events if what == "went on"]
    assert sorted(went_on) == [("base", 1, (jobs[1], jobs[3])), ("head", 1, (jobs[1], jobs[3]))], events
    assert not [e for e in events if e[1] and e[2] == "start"], events  # no jittered process started
    assert all(len(evidence.counts_again[side][job]) == DRAWS
               for side in ("base", "head") for job in (jobs[1], jobs[3]))
    assert not evidence.counts_again["base"].get(jobs[0])
    assert all(t["confirmed"] == 2 for t in evidence.count_tally.values()), evidence.count_tally


def test_the_first_processes_do_not_go_on_where_a_pass_of_its_own_costs_less_nor_where_one_side_has_none(
        tmp_path, monkeypatch):
    """schedule._Confirming._go_on: many rows whose counts moved (12, after a 2 s start-up) cost less in a process
    of their own that counts alone (no simulation) than in the first processes, which simulate
    (CONTINUED_ROW_COST against a start-up and SIMULATION_COST less): a jittered pass is started for them. And
    where one side's first counts all came from the cache (no first process to go on), the moved row gets a
    pass of its own."""
    events, jobs, evidence = _confirming_trial(tmp_path, monkeypatch, cores=2, share=100, rows=12, row_seconds=0.3,
                                               moving=tuple(range(12)), go_on=True, startup=2.0)
    assert not [e for e in events if e[2] == "went on"], events
    assert sorted(side for side, jitter, what, _, _ in events if jitter == 1 and what == "start") == ["base", "head"]
    assert {job for job in jobs if evidence.counts_again["head"].get(job)} == set(jobs)
    monkeypatch.undo()
    (tmp_path / "cached").mkdir()
    events, jobs, evidence = _confirming_trial(tmp_path / "cached", monkeypatch, cores=2, share=100, rows=4,
                                               row_seconds=0.3, moving=(1,), cached=("base",), go_on=True,
                                               startup=2.0)
    assert not [e for e in events if e[2] == "went on"], events
    assert {job for job in jobs if evidence.counts_again["head"].get(job)} == {jobs[1]}


def test_the_candidates_confirmation_may_run_past_the_countings_share_into_its_own(tmp_path, monkeypatch):
    """Rounds.confirm_share: the first processes (12 rows at 0.5 s after a 2 s start-up, 8 s) leave a 9 s
    counting share too short for their candidate's draws after them, which then start beside them at the
    latest moment (as test_on_two_cores_a_pass_that_would_not_fit_after_the_first_processes_starts_beside_them);
    with 10 s more for confirming, the first processes go on with it once they have counted every row (no
    process started for it, no core shared), past the share, and a note says by how much."""
    events, jobs, evidence = _confirming_trial(tmp_path, monkeypatch, cores=2, share=9, rows=12, row_seconds=0.5,
                                               go_on=True, startup=2.0, pass_seconds=3.0)
    assert [e for e in events if e[1] == 1 and e[2] == "start"], events  # beside them, within the share
    (tmp_path / "more").mkdir()
    events, jobs, evidence = _confirming_trial(tmp_path / "more", monkeypatch, cores=2, share=9, rows=12,
                                               row_seconds=0.5, go_on=True, startup=2.0, pass_seconds=3.0, confirm=10)
    assert not [e for e in events if e[1] == 1 and e[2] == "start"], events
    assert sorted(side for side, jitter, what, _, _ in events if what == "went on") == ["base", "head"], events
    assert evidence.counts_again["head"].get(jobs[0])
    assert [n for n in evidence.notes if "past the counting's share of the budget" in n], evidence.notes


def test_on_two_cores_beside_a_lone_first_process_a_pass_runs_its_sides_one_after_the_other(tmp_path, monkeypatch):
    """schedule._Confirming on two cores, the base's first counts from the cache: the head's first process runs
    alone, one core idle; the moved row's pass starts beside it, on that core, its base's and head's jittered
    processes one after the other (_at_once), so that no core runs two valgrind processes."""
    events, jobs, evidence = _confirming_trial(tmp_path, monkeypatch, cores=2, share=100, rows=6, row_seconds=0.5,
                                               cached=("base",), pass_seconds=0.5)
    head_end = max(t for side, jitter, what, t, _ in events if side == "head" and jitter == 0 and what == "end")
    spans = {side: [t for s, jitter, _, t, _ in events if s == side and jitter == 1] for side in ("base", "head")}
    assert all(len(span) == 2 for span in spans.values()), events
    assert min(min(span) for span in spans.values()) < head_end - 0.5, events  # beside the head's first process
    first, second = sorted(spans.values())
    assert first[1] <= second[0], events  # one after the other
    assert {job for job in jobs if evidence.counts_again["head"].get(job)} == {jobs[0]}


def test_on_two_cores_a_pass_that_would_not_fit_after_the_first_processes_starts_beside_them(tmp_path, monkeypatch):
    """schedule._Confirming on two cores with a share too short to wait: the first processes are expected to
    count until their share ends (6.4 s: 12 rows at 0.5 s after a 2 s start-up), and the row's confirmation
    after them (going on: CONTINUED_ROW_COST of its 2.5 s first seconds) would not end within the 8 s share, so
    a pass of its own starts at the latest moment it fits at half speed beside them, while they still count."""
    events, jobs, evidence = _confirming_trial(tmp_path, monkeypatch, cores=2, share=8, rows=12, row_seconds=0.5,
                                               startup=2.0)
    first_end = min(t for _, jitter, what, t, _ in events if jitter == 0 and what == "end")
    confirming = [t for _, jitter, what, t, _ in events if jitter == 1 and what == "start"]
    assert len(confirming) == 2 and max(confirming) < first_end - 0.5, events  # beside them
    assert {job for job in jobs if evidence.counts_again["base"].get(job)} == {jobs[0]}


def test_draws_made_going_on_are_cached_apart_and_read_back_where_a_side_has_them(tmp_path, monkeypatch):
    """collect.collect_counts(then=...): the draws a first process makes going on (its worker's lines with
    "again") are placed as a jittered process's and cached under their own key (counts_cache.CONTINUED), so a
    pass started jittered finds nothing of them in the cache (the two kinds differ by 0.1-0.2% a row:
    evaluation/continued_draws.py), while continued_in_cache finds them, with their cycles, for place_continued.
    The valgrind process is recorded, not run (collect._count replaced)."""
    from torchbench.ab import collect
    from torchbench.ab.counts_cache import CountsCache

    suite, sides = _sides(tmp_path)
    job = ("bench_meet.Made.time_read", 0)
    key = f"{job[0]}|{job[1]}"
    runs = []

    def count(suite, side, jobs, jitter=0, draws=1, on_line=None, ask=None, **_):
        runs.append((jitter, draws))
        if on_line:
            on_line({"key": key, "counts": [1.0] * 3, "cycles": [2.0] * 3})
            if ask and (asked := ask()) and key in asked["keys"]:
                on_line({"key": key, "counts": [1.1] * 8, "cycles": [2.2] * 8, "draws": 8, "again": asked["jitter"]})
        return {key: {"counts": [1.0] * draws, "draws": draws}}

    monkeypatch.setattr(collect, "_count", count)
    cache = CountsCache(tmp_path / "counts", Path(sys.executable), suite, None)
    evidence = Evidence()
    evidence.add_job(job, JobInfo(job[0], by_call=True), "base")
    tally = collect_counts(suite, sides["base"], [job], evidence, cache.view(), on_row=lambda job: None,
                           then=iter([collect.Continued([job], 1, 8, time.time() + 60), None]).__next__)
    assert tally["continued"] == 1 and evidence.counts_again["base"][job] == [[1.1]] * 8
    assert evidence.cycles_again["base"][job] == [[2.2]] * 8
    fresh = Evidence()
    fresh.add_job(job, JobInfo(job[0], by_call=True), "base")
    found = collect.continued_in_cache(sides["base"], [job], fresh, cache.view(), 1, 8)
    assert found == {job: ([1.1] * 8, {"cycles": [2.2] * 8, "events": []})}
    assert collect.continued_in_cache(sides["base"], [job], fresh, cache.view(), 2, 8) == {}
    collect.place_continued(sides["base"], found, fresh, 8)
    assert fresh.counts_again["base"][job] == [[1.1]] * 8 and fresh.cycles_again["base"][job] == [[2.2]] * 8
    runs.clear()
    collect_counts(suite, sides["base"], [job], fresh, cache.view(), jitter=1, draws=8)
    assert runs == [(1, 8)]  # a pass started jittered is not served the draws made going on


def test_a_jittered_pass_simulates_only_where_it_must_and_a_row_kept_without_cycles_is_counted_again(
        tmp_path, monkeypatch):
    """collect.collect_counts(simulate=False), a jittered pass of rows whose counts moved: its valgrind process
    is told not to simulate (asv_worker.SIMULATE_ENV "0"), and what it counts is kept without simulated
    cycles; a later pass of the same jittered process that must simulate (a row moved by its cycles) counts
    that row again instead of reading its cycles-less counts from the cache, and one that need not reads them.
    The valgrind processes are recorded, not run (collect._count replaced)."""
    from torchbench.ab import collect
    from torchbench.ab.counts_cache import CountsCache
    from torchbench_core.asv_worker import SIMULATE_ENV

    suite, sides = _sides(tmp_path)
    job = ("bench_meet.Made.time_read", 0)
    runs = []

    def count(suite, side, jobs, simulate=True, draws=1, **_):
        runs.append(([tuple(j[:2]) for j in jobs], simulate))
        found = {"counts": [1.0] * draws, "draws": draws}
        return {f"{j[0]}|{j[1]}": found | ({"cycles": [2.0] * draws, "events": [{}] * draws} if simulate else {})
                for j in jobs}

    monkeypatch.setattr(collect, "_count", count)
    cache = CountsCache(tmp_path / "counts", Path(sys.executable), suite, None)
    for simulate, counted in ((False, True), (False, False), (True, True)):
        evidence = Evidence()
        evidence.add_job(job, JobInfo(job[0], by_call=True), "base")
        tally = collect_counts(suite, sides["base"], [job], evidence, cache.view(), jitter=1, draws=8,
                               simulate=simulate)
        assert tally["counted"] == int(counted) and tally["cached"] == int(not counted), (simulate, tally)
        assert len(evidence.counts_again["base"][job]) == 8
        assert bool(evidence.cycles_again["base"].get(job)) == simulate
    assert runs == [([job], False), ([job], True)]
    # the process's environment says so: collect._count passes SIMULATE_ENV "0" where it must not simulate
    monkeypatch.undo()
    seen = {}
    monkeypatch.setattr(collect, "_worker", lambda suite, side, mode, jobs, timeout, env=None, **_: seen.update(env)
                        or {})
    collect._count(suite, sides["base"], [job], jitter=1, simulate=False)
    assert seen.get(SIMULATE_ENV) == "0"
    seen.clear()
    collect._count(suite, sides["base"], [job], jitter=1)
    assert SIMULATE_ENV not in seen


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
