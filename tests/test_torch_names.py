"""`import torchbench_core as benchmark` in place of `torch.utils.benchmark`: every name torch exports is here,
or docs/differences.md names it with the reason (issue 49)."""

import importlib
from pathlib import Path

import torch
import torch.utils.benchmark as torch_benchmark

import torchbench_core as benchmark

DIFFERENCES = (Path(__file__).resolve().parents[1] / "docs" / "differences.md").read_text()
# the modules torch.utils.benchmark star-imports, and the others of torch.utils.benchmark.utils
STAR = ["common", "timer", "compare", "fuzzer", "valgrind_wrapper.timer_interface", "sparse_fuzzer"]
OTHERS = ["compile", "cpp_jit"]


def _exported(module) -> list[str]:
    """A module's __all__, or (sparse_fuzzer has none) the public names it defines."""
    if hasattr(module, "__all__"):
        return list(module.__all__)
    return [n for n, v in vars(module).items() if not n.startswith("_") and
            getattr(v, "__module__", None) == module.__name__]


def _documented(name: str) -> bool:
    return f"`{name}`" in DIFFERENCES or f"`utils.{name}`" in DIFFERENCES


def test_every_name_torch_utils_benchmark_exports_is_here_or_documented():
    names = ["utils"] + [n for m in STAR for n in _exported(importlib.import_module(f"torch.utils.benchmark.utils.{m}"))]
    assert {"FuzzedSparseTensor", "Timer", "CallgrindStats"} <= set(names) and len(names) == 22
    assert all(hasattr(torch_benchmark, n) for n in names)
    assert [n for n in names if not hasattr(benchmark, n) and not _documented(n)] == []
    assert [n for n in names if not hasattr(benchmark, n)] == []  # all present, none only documented


def test_benchmark_utils_has_torchs_modules_by_name_or_documents_them():
    for module in STAR + OTHERS:
        theirs = importlib.import_module(f"torch.utils.benchmark.utils.{module}")
        try:
            ours = importlib.import_module(f"torchbench_core.utils.{module}")
        except ModuleNotFoundError:
            assert _documented(module), module
            continue
        assert [n for n in _exported(theirs) if getattr(ours, n, None) is not getattr(benchmark, n, object())] == []
    assert benchmark.utils.common.Measurement is benchmark.Measurement
    assert benchmark.utils.timer.Language is benchmark.Language
    assert benchmark.utils.valgrind_wrapper.timer_interface.CopyIfCallgrind is benchmark.CopyIfCallgrind


def test_scripts_for_torch_utils_benchmark_run_with_the_import_swapped():
    """The three failures issue 49 names: FuzzedSparseTensor, roll_parameter, benchmark.utils."""
    sparse = benchmark.FuzzedSparseTensor("x", size=(8, 8), density="density", coalesced="coalesced")
    fuzzer = benchmark.Fuzzer(parameters=[benchmark.FuzzedParameter("density", distribution={0.25: 1.0}),
                                          benchmark.FuzzedParameter("coalesced", distribution={True: 1.0})],
                              tensors=[sparse, benchmark.FuzzedTensor("y", size=(4,), roll_parameter="r")], seed=0)
    (tensors, properties, _), = fuzzer.take(1)
    assert tensors["x"].layout == torch.sparse_coo and properties["x"]["density"] == 0.25
    assert tensors["y"].shape == (4,)
    assert isinstance(benchmark.utils.common.select_unit(1e-5)[0], str)
