import json
import os
import subprocess
import sys
from pathlib import Path

from torchbench_core.suite import work_orders


def run(*args):
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parent))  # for callgrind_cases
    return subprocess.run([sys.executable, "-m", "torchbench_core.suite", *args], capture_output=True, text=True,
                          timeout=900, env=env)


def test_list_and_selection():
    everything, version = work_orders()
    some, same_version = work_orders(["^Reduction"])
    assert len(everything) >= 100 and 0 < len(some) < len(everything) and version == same_version
    proc = run("--list", "-k", "^Reduction / sum")
    assert proc.returncode == 0 and "Reduction / sum [explicit, 1 thread(s)]" in proc.stdout


def test_end_to_end_writes_one_result_file_and_tables(tmp_path):
    out = tmp_path / "results.json"
    proc = run("-k", "^Reduction / sum", "-k", "^Empty / no allocation", "--min-run-time", "0.02",
               "--callgrind-repeats", "2", "--callgrind-number", "20", "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert doc["schema"] == "torchbench_core.SuiteResults" and doc["version"] == work_orders()[1]
    assert len(doc["cases"]) == 2
    for case in doc["cases"].values():
        assert case["wall"]["raw_times"] and case["instructions"] and len(case["instructions"]) == 2
        assert case["errors"] == []
    assert "Times are in" in proc.stdout and "instructions (baseline subtracted) per run" in proc.stdout
    assert "instruction counts" in proc.stderr  # progress line


def test_a_failing_case_fails_the_command_but_keeps_the_others(tmp_path):
    out = tmp_path / "results.json"
    proc = run("--definitions", "callgrind_cases:FAILING_DEFINITIONS", "--mode", "wall", "--min-run-time", "0.02",
               "--out", str(out))
    assert proc.returncode == 1
    doc = json.loads(out.read_text())
    by_label = {tuple(c["label"]): c for c in doc["cases"].values()}
    assert by_label[("ok", "add")]["wall"] is not None
    assert "NameError" in by_label[("broken",)]["errors"][0]
    assert "1 case(s) failed" in proc.stdout


def test_unknown_definitions_are_a_clear_error():
    proc = run("--definitions", "no_such_module:X", "--list")
    assert proc.returncode != 0 and "cannot load definitions 'no_such_module:X'" in proc.stderr
