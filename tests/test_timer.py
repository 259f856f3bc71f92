import time
import warnings

import pytest
import torch
import torch.utils.benchmark as torch_benchmark

import torchbench_core as tb
from torchbench_core import clock


def test_timeit_returns_one_sample_after_a_warm_up():
    counter = [0]
    m = tb.Timer("counter[0] += 1", globals={"counter": counter}).timeit(100)
    assert m.number_per_run == 100 and len(m.raw_times) == 1
    assert counter[0] == 100 + 2  # warm-up of max(number // 100, 2) runs, as torch
    assert m.median == m.raw_times[0] / 100


def test_repeat_gives_one_sample_per_repeat():
    m = tb.Timer("x + 1", setup="x = 1").repeat(repeat=7, number=50)
    assert m.number_per_run == 50 and len(m.raw_times) == 7
    with pytest.raises(ValueError):
        tb.Timer().repeat(repeat=0)


def test_autorange_grows_number_like_timeit():
    seen = []
    m = tb.Timer("time.sleep(0.03)", setup="import time").autorange(callback=lambda n, t: seen.append(n))
    assert seen == [1, 2, 5, 10][: len(seen)] and m.number_per_run == seen[-1]
    assert m.raw_times[0] >= 0.2


def test_setup_runs_once_per_measurement_call_not_per_block():
    """torch re-runs setup for every block and every block-size probe."""
    runs = {}
    for lib in (tb, torch_benchmark):
        calls = []
        m = lib.Timer("x = sum(range(50))", setup="calls.append(1); x = 0", globals={"calls": calls}).blocked_autorange(
            min_run_time=0.05
        )
        runs[lib] = (len(calls), len(m.raw_times))
    assert runs[tb][0] == 1 and runs[tb][1] > 1
    assert runs[torch_benchmark][0] > runs[torch_benchmark][1]  # probes + every block


def test_stmt_and_setup_share_locals_and_state_persists_across_blocks():
    seen = []
    m = tb.Timer("n += 1", setup="n = 0", globals={}).blocked_autorange(min_run_time=0.01)
    # After the measurement the generator frame is gone; check through a global.
    tb.Timer("n += 1; seen.append(n)", setup="n = 0", globals={"seen": seen}).repeat(repeat=3, number=2)
    assert seen == list(range(1, 9))  # 2 warm-up + 3 blocks of 2: one continuous count
    assert m.number_per_run >= 1


def test_callable_stmt_and_setup():
    calls = {"stmt": 0, "setup": 0}

    def bump():
        calls["stmt"] += 1

    def prepare():
        calls["setup"] += 1

    t = tb.Timer(bump, setup=prepare)
    m = t.timeit(10)
    assert calls == {"stmt": 12, "setup": 1}
    assert m.stmt == "test_callable_stmt_and_setup.<locals>.bump()"
    assert "prepare()" in m.task_spec.setup


def test_thread_count_is_set_inside_and_restored_after():
    prior = torch.get_num_threads()
    wanted = 1 if prior != 1 else 2
    seen = []
    tb.Timer("seen.append(torch.get_num_threads())", globals={"seen": seen}, num_threads=wanted).timeit(3)
    assert set(seen) == {wanted}
    assert torch.get_num_threads() == prior


def test_threads_restored_when_the_stmt_raises():
    prior = torch.get_num_threads()
    with pytest.raises(ZeroDivisionError):
        tb.Timer("1 / 0", num_threads=prior + 1).blocked_autorange(min_run_time=0.01)
    assert torch.get_num_threads() == prior


def test_blocked_autorange_collects_min_run_time_of_samples():
    blocks = []
    m = tb.Timer("sum(range(20))").blocked_autorange(callback=lambda n, t: blocks.append((n, t)), min_run_time=0.05)
    assert sum(m.raw_times) >= 0.05
    assert [t for _, t in blocks] == m.raw_times
    assert {n for n, _ in blocks} == {m.number_per_run}


def test_block_size_follows_torchs_rule():
    """Block sizes are powers of ten chosen by torch's overhead criterion."""
    m = tb.Timer("torch.add(x, x)", setup="x = torch.ones(4)").blocked_autorange(min_run_time=0.05)
    assert m.number_per_run in (100, 1_000, 10_000, 100_000)


def test_adaptive_autorange_has_a_minimum_sample_count():
    """torch may stop after 4 samples; we require min_samples (10) first."""
    m = tb.Timer("sum(range(20))").adaptive_autorange(threshold=0.5, min_run_time=0.001)
    assert len(m.raw_times) >= 10
    m = tb.Timer("sum(range(20))").adaptive_autorange(threshold=0.5, min_run_time=0.001, min_samples=25)
    assert len(m.raw_times) >= 25
    with pytest.raises(ValueError):
        tb.Timer().adaptive_autorange(min_samples=3)


def test_adaptive_autorange_warns_when_it_runs_out_of_time():
    with pytest.warns(RuntimeWarning, match="stopped at max_run_time=0.05"):
        m = tb.Timer("sum(range(20))").adaptive_autorange(threshold=0.0, max_run_time=0.05)
    assert sum(m.raw_times) <= 0.05 + max(m.raw_times)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tb.Timer("sum(range(20))").adaptive_autorange(threshold=10.0, max_run_time=5)


def test_metadata_reaches_the_task_spec():
    t = tb.Timer("x", setup="x = 1", label="L", sub_label="S", description="D", env="E", num_threads=2)
    assert t.task_spec == tb.TaskSpec("x", "x = 1", "", "L", "S", "D", "E", 2)


def test_stmt_and_setup_are_dedented():
    t = tb.Timer("""
        y = x
        y += 1
    """, setup="""
        x = 1
    """)
    assert t.task_spec.stmt == "y = x\ny += 1" and t.task_spec.setup == "x = 1"
    t.timeit(5)


@pytest.mark.parametrize("kwargs, what", [({"stmt": "x +* 1"}, "stmt"), ({"setup": "def f(:"}, "setup")])
def test_code_that_does_not_compile_is_named(kwargs, what):
    with pytest.raises(ValueError, match=f"{what} does not compile") as info:
        tb.Timer(**kwargs)
    assert next(iter(kwargs.values())) in str(info.value)


def test_return_or_yield_in_stmt_is_rejected():
    for stmt in ("return 1", "yield 1"):
        with pytest.raises(ValueError, match="stmt does not compile"):
            tb.Timer(stmt)


def test_bad_arguments_are_refused_clearly():
    with pytest.raises(ValueError, match="Unknown language"):
        tb.Timer(language="fortran")
    with pytest.raises(ValueError, match="global_setup is C\\+\\+ only"):
        tb.Timer(global_setup="#include <vector>")
    with pytest.raises(ValueError, match="num_threads"):
        tb.Timer(num_threads=0)
    with pytest.raises(TypeError, match="stmt must be a str or a callable"):
        tb.Timer(stmt=3)


def test_torch_is_in_the_globals_and_user_globals_are_not_mutated():
    g = {"x": torch.ones(2)}
    tb.Timer("torch.add(x, x)", globals=g).timeit(2)
    assert set(g) == {"x"}


def test_cpu_only_clock_is_perf_counter_itself():
    """torch's default timer() asks torch.accelerator.is_available() on every read."""
    if torch.accelerator.is_available():
        pytest.skip("an accelerator is present")
    assert clock.default_clock() is time.perf_counter
    assert tb.Timer()._timer is time.perf_counter
    assert isinstance(tb.timer(), float)


def test_with_an_accelerator_the_clock_synchronises(monkeypatch):
    """Wiring only (this machine has no GPU): the resolved clock calls the
    device's synchronize before reading perf_counter."""
    calls = []
    monkeypatch.setattr(torch.accelerator, "is_available", lambda: True)
    monkeypatch.setattr(torch.accelerator, "synchronize", lambda: calls.append(1))
    synced = clock._make_clock()
    assert synced is not time.perf_counter
    synced()
    synced()
    assert calls == [1, 1]


def test_a_custom_timer_is_used_as_given():
    ticks = iter(range(0, 10_000, 2))
    m = tb.Timer("pass", timer=lambda: next(ticks)).repeat(repeat=3, number=10)
    assert m.raw_times == [2, 2, 2]


def test_measured_values_are_in_the_same_range_as_torch():
    """Not a speed test: guards against unit errors (e.g. per block vs per run)."""
    ours = tb.Timer("sum(range(100))").blocked_autorange(min_run_time=0.05)
    theirs = torch_benchmark.Timer("sum(range(100))").blocked_autorange(min_run_time=0.05)
    assert 0.2 < ours.median / theirs.median < 5


def _slow_at(calls_to_slow: set[int], seconds: float):
    """A statement (callable) that is fast except on the given call numbers (1-based)."""
    import time as _time

    count = [0]

    def stmt():
        count[0] += 1
        if count[0] in calls_to_slow:
            _time.sleep(seconds)

    return stmt


def test_a_cold_first_call_does_not_size_the_blocks():
    """One of 37 processes of torch.add picked number=1 here: its first call was slow."""
    m = tb.Timer(_slow_at({1}, 0.3)).blocked_autorange(min_run_time=0.2)
    assert m.number_per_run >= 1000, m.number_per_run


def test_one_slow_probe_does_not_stop_the_growth_early():
    """A slow stretch during the 1000-call probe (calls 113-1112, after the warm-up and the
    1, 10 and 100 probes) made torch's rule settle for 1000; the confirming probe does not."""
    m = tb.Timer(_slow_at({500}, 0.005)).blocked_autorange(min_run_time=0.2)
    assert m.number_per_run > 1000, m.number_per_run


def test_a_statement_slower_than_min_run_time_runs_once_per_block():
    m = tb.Timer(_slow_at(set(range(1, 100)), 0.06)).blocked_autorange(min_run_time=0.05)
    assert m.number_per_run == 1
