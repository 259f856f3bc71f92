"""torch's instruction-count suite's own definition files (tests/data/pytorch/instruction_counts, fetched from
pytorch/pytorch, BSD: see the folder's NOTICE), loaded unchanged through torchbench_core.torch_suite's ``core``
tree, expanded and counted."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import torchbench_core.torch_suite

TORCH_SUITE = Path(__file__).resolve().parent / "data" / "pytorch" / "instruction_counts"

# Loads torch's definitions/standard.py (which imports definitions/setup.py) with nothing but our `core` tree and
# torch's folder on sys.path, expands it, and prints the cases as JSON.
EXPAND = textwrap.dedent("""
    import json, sys
    sys.path[:0] = [sys.argv[1], sys.argv[2]]
    from definitions.standard import BENCHMARKS
    from core.expand import materialize
    cases = materialize(BENCHMARKS)
    print(json.dumps({"flat": len(BENCHMARKS), "cases": [
        [list(label), auto.as_dict, args.to_dict()] for label, auto, args in cases]}))
""")


def _expand(cache: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", EXPAND, torchbench_core.torch_suite.PATH, str(TORCH_SUITE)],
                         capture_output=True, text=True, timeout=300, cwd=cache,
                         env={**os.environ, "TORCHBENCH_CPP_CACHE": str(cache)})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def torchs_cases(tmp_path_factory):
    cache = tmp_path_factory.mktemp("cpp_cache")
    return cache, _expand(cache)


def test_torchs_own_definitions_load_unchanged_and_expand_to_torchs_case_count(torchs_cases):
    _, expanded = torchs_cases
    cases = expanded["cases"]
    # torch's rules: each of the 51 definitions gives Python and C++ eager cases; the 15 with torchscript=True
    # also TorchScript ones, the 2 with autograd=True forward+backward ones, on 1 and 2 threads: 156 cases
    assert expanded["flat"] == 51 and len(cases) == 156
    languages = [auto["language"] for _, auto, _ in cases]
    assert languages.count("Python") == languages.count("C++") == 78
    assert sum(auto["runtime"] == "TorchScript" for _, auto, _ in cases) == 42
    # the side-by-side tables became one Indexing benchmark per line (core.utils.iter_parsed_lines)
    indexing = {tuple(label) for label, _, _ in cases if label[0] == "Indexing"}
    assert ("Indexing", "[...]") in indexing and ("Indexing", "[True]") in indexing and len(indexing) == 9
    cpp = {tuple(label): args for label, auto, args in cases
           if auto["language"] == "C++" and auto["runtime"] == "Eager"}
    assert cpp[("Indexing", "[:]")]["stmt"].startswith("x.index_put_({Slice(None, None, None)}, 1);")


def test_every_eager_python_case_of_torchs_definitions_runs(torchs_cases):
    import torch

    _, expanded = torchs_cases
    ran = 0
    for label, auto, args in expanded["cases"]:
        if auto["language"] == "Python" and auto["runtime"] == "Eager":
            namespace = {"torch": torch}
            exec(args["setup"], namespace)
            exec(args["stmt"], namespace)
            ran += 1
    assert ran == 57


@pytest.mark.slow
def test_a_cpp_case_of_torchs_definitions_counts_the_same_in_two_processes(torchs_cases, monkeypatch):
    from torchbench_core.callgrind import collect_callgrind_many
    from torchbench_core.grouped import AutoLabels, AutogradMode, RuntimeMode, TimerArgs
    from torchbench_core.runner import WorkOrder

    cache, expanded = torchs_cases
    monkeypatch.setenv("TORCHBENCH_CPP_CACHE", str(cache))
    label, auto, args = next(c for c in expanded["cases"] if c[0] == ["Pointwise", "Math", "add", "Tensor-Scalar"]
                             and c[1]["language"] == "C++")
    order = WorkOrder(tuple(label), AutoLabels(RuntimeMode(auto["runtime"]), AutogradMode(auto["autograd"]),
                                               auto["language"]), TimerArgs(**args))
    py = next(c for c in expanded["cases"] if c[0] == label and c[1]["language"] == "Python")
    python = WorkOrder(tuple(label), AutoLabels(RuntimeMode.EAGER, AutogradMode.FORWARD), TimerArgs(**py[2]))
    first, second, in_python = collect_callgrind_many([order.timer(), order.timer(), python.timer()], number=100)
    assert first[0].counts() == second[0].counts() > 0
    assert first[0].counts() < in_python[0].counts()
