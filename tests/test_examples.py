"""Seed 000's four examples ship as runnable modules (python -m torchbench_core.examples.NAME) and run."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest


def example(name: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", f"torchbench_core.examples.{name}", *args],
                          capture_output=True, text=True, timeout=timeout)


def test_simple_timeit():
    proc = example("simple_timeit", "--runs", "2", "--number", "200")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("Broadcasting add (4x8)") == 4 and proc.stdout.count("Run: ") == 2
    assert "200 runs" in proc.stdout and "Median:" in proc.stdout  # timeit's one block, then autorange's


def test_compare_colours_the_slower_branches():
    proc = example("compare", "--sizes", "1", "20000", "--threads", "1", "--repeats", "1", "--min-run-time", "0.01")
    assert proc.returncode == 0, proc.stderr
    unformatted, formatted = proc.stdout.split("== Formatted")
    for part in (unformatted, formatted):
        assert "master" in part and "my_branch" in part and "severe_regression" in part
        assert "size: 20000" in part
    # 80,000 elements at 5 ns each: the severe branch sleeps ~0.4 ms a call, and colorize marks it
    assert "\x1b[" in formatted and "\x1b[" not in unformatted


def test_fuzzer_ranks_configurations_per_element():
    proc = example("fuzzer", "-n", "4", "--min-run-time", "0.01", "--show", "2")
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"Average attempts per valid config: \d+\.\d", proc.stdout)
    assert "Best:" in proc.stdout and "Worst:" in proc.stdout
    assert len(re.findall(r"ns / element", proc.stdout)) == 4


@pytest.mark.slow
def test_end_to_end_compares_two_builds_in_alternating_processes():
    proc = example("end_to_end", "--seeds", "1", "--replicates", "2", "--dtypes", "float32", "--min-run-time",
                   "0.01")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "(the same: an A/A run)" in out and "4 / 4 processes" in proc.stderr
    counts = [int(n) for n in re.findall(r"(?:Improved  \(>5%\)|Regressed \(>5%\)|Within 5%):\s+(\d+)", out)]
    assert sum(counts) == 3, out  # one seed, three fuzzed inputs, each a row measured in both "builds"
    assert len(re.findall(r"torch\.std\(x\)$", out, re.MULTILINE)) == 3, out
    bad = example("end_to_end", "--pr", "/nonexistent/python", "--seeds", "1", "--replicates", "1")
    assert bad.returncode != 0 and "/nonexistent/python" in bad.stderr


def test_end_to_end_table_counts_torchs_way_and_ours():
    from torchbench_core import Measurement, TaskSpec
    from torchbench_core.examples.end_to_end import table

    def m(env, median, description="[0, seed=0] (float32), stmt = torch.std(x)"):
        out = Measurement(1, [median] * 3, TaskSpec("torch.std(x)", "", label="std", env=env, description=description))
        out.metadata = {"numel": 10, "shape": [10], "dtype": "float32"}
        return out

    text = table([m("ref", 1.0), m("ref", 1.02), m("pr", 1.2), m("pr", 1.25)])
    assert re.search(r"Regressed \(>5%\):\s+1", text) and "beyond every replicate of the other: 1 of 1" in text
    text = table([m("ref", 1.0), m("ref", 1.3), m("pr", 1.2), m("pr", 1.25)])
    assert re.search(r"Regressed \(>5%\):\s+1", text) and "of the other: 0 of 1" in text  # overlapping


def test_seed_004s_overhead_and_flame_graph_on_the_tree_as_it_is(tmp_path):
    """bench.py and pyspybench.py of seed 004: every case's overhead in ns, and one case's py-spy flame graph,
    without an asv history (benchmarks/torch_function.py's main)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    run = lambda *args: subprocess.run([sys.executable, "-m", "benchmarks.torch_function", *args], cwd=root,
                                       capture_output=True, text=True, timeout=300)
    proc = run("--processes", "2", "--seconds", "0.05")
    assert proc.returncode == 0, proc.stderr
    rows = re.findall(r"^(\w+) +(\d+) ns per torch\.add \(2 processes: (\d+)-(\d+) ns\); +([+-]\d+) ns over Tensor$",
                      proc.stdout, re.MULTILINE)
    assert [r[0] for r in rows] == ["Tensor", "SubTensor", "WithTorchFunction", "SubWithTorchFunction"], proc.stdout
    assert rows[0][4] == "+0" and all(int(r[2]) <= int(r[1]) <= int(r[3]) for r in rows)
    svg = tmp_path / "tensor.svg"
    proc = run("--flame", "WithTorchFunction", "--out", str(svg), "--seconds", "1")
    assert proc.returncode == 0, proc.stderr
    assert svg.read_text().startswith("<?xml") and "__torch_function__" in svg.read_text()
