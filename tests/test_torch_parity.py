"""Code written for torch.utils.benchmark runs the same here (issue 18), or the README says why not.

Each test runs the same code against torch where torch can run it. The valgrind
tests count everything of ours in one batch, because each valgrind process spends ~45 s starting
Python and torch; torch's own collect_callgrind (instrumented from its start: 100-230 s) runs in the
validation test only (`pytest -m validation`).
"""

from __future__ import annotations

import contextlib
import sys
from typing import Iterator

import pytest
import torch
import torch.utils.benchmark as torch_benchmark
from torch.utils.benchmark.utils.valgrind_wrapper import timer_interface as torch_cg

import torchbench_core as tb
from torchbench_core.callgrind import CallgrindError, _parse_annotate, collect_callgrind_many

# TorchScript is what these tests port; its deprecation is torch's to announce, not ours to test.
pytestmark = [pytest.mark.filterwarnings(f"ignore:`torch.jit.{fn}` is deprecated:DeprecationWarning")
              for fn in ("script", "save")]


def add_one(x: torch.Tensor) -> torch.Tensor:
    return x + 1


class MainOnlyModule(torch.nn.Module):
    """Pickles by reference to `__main__` (see `_defined_in_main`), which the valgrind process cannot resolve."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


@contextlib.contextmanager
def _defined_in_main() -> Iterator[None]:
    """MainOnlyModule as if defined in a user's script: it pickles here but fails to load in a new process."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(MainOnlyModule, "__module__", "__main__")
        mp.setattr(sys.modules["__main__"], "MainOnlyModule", MainOnlyModule, raising=False)
        yield


# -- Timer("pass") ------------------------------------------------------------

@pytest.mark.parametrize("args", [(), ("pass",)], ids=["Timer()", "Timer('pass')"])
def test_pass_statement_is_kept_as_in_torch(args):
    ours, theirs = tb.Timer(*args).repeat(repeat=4, number=10), torch_benchmark.Timer(*args).timeit(10)
    assert (ours.task_spec.stmt, ours.task_spec.setup) == (theirs.task_spec.stmt, theirs.task_spec.setup)
    assert ours.task_spec.stmt == "pass"
    # Same samples under torch's task spec: the repr must read the same, title line included.
    same = torch_benchmark.Measurement(ours.number_per_run, ours.raw_times, theirs.task_spec)
    assert repr(ours).splitlines()[1:] == repr(same).splitlines()[1:]
    assert repr(ours).splitlines()[1] == "pass"


def test_pass_statement_names_its_compare_row_as_in_torch():
    spec = dict(label="noop", description="Python")  # torch's Compare needs both
    ours = tb.Timer(**spec).repeat(repeat=4, number=10)
    their_spec = torch_benchmark.Timer(**spec).timeit(1).task_spec
    theirs = torch_benchmark.Measurement(ours.number_per_run, ours.raw_times, their_spec)
    table = str(tb.Compare([ours]))
    assert table == str(torch_benchmark.Compare([theirs]))
    assert "pass" in table and "[Unknown]" not in table


# -- CopyIfCallgrind outside valgrind -----------------------------------------

@pytest.mark.parametrize("lib, copy", [(tb, tb.CopyIfCallgrind), (torch_benchmark, torch_cg.CopyIfCallgrind)],
                         ids=["ours", "torch"])
def test_timing_uses_the_wrapped_value_as_torch_does(lib, copy):
    scripted = torch.jit.script(add_one)
    m = lib.Timer("y = f(x) + n", setup="x = torch.ones(2)", globals={"f": copy(scripted), "n": copy(2)}).timeit(5)
    assert m.number_per_run == 5


# -- CallgrindError -----------------------------------------------------------

def test_callgrind_error_is_an_oserror_as_torchs_is_and_still_a_runtime_error():
    """torch raises OSError when its valgrind run fails; `except OSError` must catch ours too."""
    with pytest.raises(OSError, match="unexpected callgrind_annotate output") as info:
        _parse_annotate("callgrind_annotate: no such file", inclusive=False)
    assert isinstance(info.value, CallgrindError) and isinstance(info.value, RuntimeError)


# -- under valgrind -----------------------------------------------------------

@pytest.fixture(scope="module")
def counted() -> dict[str, object]:
    """One valgrind process for every case of ours in this file, keyed by label."""
    timers = [
        tb.Timer("f(x)", setup="x = torch.ones(4)", globals={"f": tb.CopyIfCallgrind(torch.jit.script(add_one))},
                 label="script function"),
        tb.Timer("m(x)", setup="x = torch.ones(1, 2)",
                 globals={"m": tb.CopyIfCallgrind(torch.jit.script(torch.nn.Linear(2, 2)))}, label="script module"),
        tb.Timer("y = x * 2", globals={"x": torch.ones(3)}, label="unwrapped tensor"),
        tb.Timer("m(x)", setup="x = torch.ones(2)", globals={"m": tb.CopyIfCallgrind(MainOnlyModule())},
                 label="defined in __main__"),
    ]
    with _defined_in_main():
        results = collect_callgrind_many(timers, number=10, on_error="return")
    return {t.task_spec.label: r for t, r in zip(timers, results)}


@pytest.mark.slow
@pytest.mark.parametrize("label", ["script function", "script module"])
def test_torchscript_is_copied_with_torch_jit_and_counted(counted, label):
    """torch copies TorchScript into its valgrind process with torch.jit.save/load; pickle cannot."""
    result = counted[label]
    assert isinstance(result, tuple), result
    (stats,) = result
    assert stats.counts(subtract_baseline=True) > 0
    assert any("torch::jit" in fn for _, fn in stats.stats(inclusive=True))  # the TorchScript interpreter ran


@pytest.mark.slow
@pytest.mark.validation  # torch's own valgrind process, instrumented from its start: 100-230 s here
def test_a_global_defined_in_main_fails_torchs_collect_callgrind_with_an_oserror():
    """Torch's side of the next test: the global's class lives in `__main__`, so torch's valgrind process cannot
    load it, and torch raises an OSError (the error ours matches, below)."""
    timer = torch_benchmark.Timer("m(x)", setup="x = torch.ones(2)",
                                  globals={"m": torch_cg.CopyIfCallgrind(MainOnlyModule())})
    with _defined_in_main(), pytest.raises(OSError, match="Failed to collect callgrind profile"):
        timer.collect_callgrind(number=10)  # the one torch collect_callgrind of this file


@pytest.mark.slow
def test_a_failure_in_the_valgrind_process_is_an_oserror_as_in_torch(counted):
    """A global whose class lives in `__main__` loads in no valgrind process; ours raises an OSError, as torch's
    collect_callgrind does (torch's side: the validation test above, which costs a valgrind process of its own)."""
    ours = counted["defined in __main__"]
    assert isinstance(ours, OSError) and isinstance(ours, CallgrindError)
    # The reason and the worker's traceback stay in the message.
    assert "'defined in __main__' failed under callgrind" in str(ours)
    assert "Traceback" in str(ours) and "MainOnlyModule" in str(ours)


@pytest.mark.slow
def test_unwrapped_globals_are_copied_where_torch_raises(counted, tmp_path):
    """A difference on purpose (README): every global reaches the valgrind process, wrapped or not."""
    # The check torch's collect_callgrind makes before it starts valgrind.
    with pytest.raises(ValueError, match="requires that globals be wrapped in `CopyIfCallgrind`"):
        torch_cg.GlobalsBridge({"x": torch.ones(3)}, str(tmp_path / "globals"))
    with pytest.raises(ValueError, match="Unsupported type"):
        torch_cg.CopyIfCallgrind(torch.ones(3))  # nor may a tensor be wrapped there
    (stats,) = counted["unwrapped tensor"]
    assert stats.counts(subtract_baseline=True) > 0


def test_compare_takes_torchs_measurements_beside_ours():
    """A table of both libraries' rows (torch's Measurements read as ours), as torch's Compare would show
    each; found on a CUDA machine (evaluation/cuda_check.py), where our Compare refused torch's."""
    x = torch.ones(8)
    results = [lib.Timer("x + 1", globals={"x": x}, label="add", sub_label=name, description="8").timeit(100)
               for name, lib in (("ours", tb), ("torch", torch_benchmark))]
    assert type(results[1]).__module__.startswith("torch.utils.benchmark")
    table = str(tb.Compare(results))
    assert "ours" in table and "torch" in table and "add" in table
    theirs = str(torch_benchmark.Compare([results[1]]))
    row = next(line for line in theirs.splitlines() if "torch" in line and "|" in line)
    assert row.split("|")[1].strip() in table  # torch's row, the same figure
    with pytest.raises(ValueError, match="Expected an instance of `Measurement`"):
        tb.Compare([object()])
