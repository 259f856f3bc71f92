import pytest

from torchbench_core.grouped import AutogradMode, AutoLabels, RuntimeMode, TimerArgs
from torchbench_core.runner import Runner, WorkOrder

EXPLICIT = AutoLabels(RuntimeMode.EXPLICIT, AutogradMode.EXPLICIT)


def order(name, stmt, setup="pass", **kw):
    return WorkOrder((name,), EXPLICIT, TimerArgs(stmt, setup, **kw))


def test_wall_time_failures_are_isolated():
    orders = [
        order("ok", "torch.add(x, x)", "x = torch.ones(4)"),
        order("segfault", "ctypes.string_at(0)", "import ctypes"),
        order("hang", "time.sleep(60)", "import time"),
        order("raise", "1 / 0"),
        order("ok after", "y = x * 2", "x = torch.ones(4)"),
    ]
    results = {r.order.label[0]: r for r in
               Runner(orders, counts=False, timeout=3, retries=1, min_run_time=0.02, progress=False).run()}
    for name in ("ok", "ok after"):
        assert results[name].ok and results[name].wall.median > 0 and results[name].attempts == 1
    assert "killed by SIGSEGV" in results["segfault"].errors[0] and results["segfault"].attempts == 2
    assert "timed out after 3 s" in results["hang"].errors[0] and results["hang"].attempts == 2
    assert "ZeroDivisionError" in results["raise"].errors[0] and results["raise"].attempts == 1  # not retried


def test_measurements_carry_the_case_metadata():
    wo = WorkOrder(("training", "simple"), AutoLabels(RuntimeMode.JIT, AutogradMode.FORWARD_BACKWARD),
                   TimerArgs("y = 1", num_threads=2))
    (result,) = Runner([wo], counts=False, min_run_time=0.01, progress=False).run()
    m = result.wall
    assert (m.label, m.sub_label, m.description, m.num_threads) == (
        "training", "simple", "TorchScript Forward + Backward", 2)


def test_duplicate_orders_are_refused():
    with pytest.raises(ValueError, match="Duplicate work order"):
        Runner([order("a", "x"), order("a", "x")])


def test_counts_phase_uses_one_valgrind_batch_and_skips_compiled_cases():
    orders = [order("ok", "y = x + 1", "x = torch.ones(4)"), order("raise", "undefined_name"),
              order("compiled", "y = 1", compiled=True)]
    results = {r.order.label[0]: r for r in
               Runner(orders, wall=False, callgrind_number=20, callgrind_repeats=2, progress=False).run()}
    assert len(results["ok"].instructions) == 2 and results["ok"].baseline_instructions > 0
    assert results["ok"].instructions[0] > 0
    assert "NameError" in results["raise"].errors[0]
    assert results["compiled"].instructions is None and results["compiled"].ok
