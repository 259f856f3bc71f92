import json
import os
import subprocess
import sys
from pathlib import Path

import cpp_definitions
from torchbench_core.suite import work_orders


def run(*args, cpp_cache=None):
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parent))  # for callgrind_cases, cpp_definitions
    if cpp_cache is not None:
        env["TORCHBENCH_CPP_CACHE"] = str(cpp_cache)
    return subprocess.run([sys.executable, "-m", "torchbench_core.suite", *args], capture_output=True, text=True,
                          timeout=900, env=env)


def test_list_and_selection():
    everything, version = work_orders()
    some, same_version = work_orders(["^Reduction"])
    assert len(everything) >= 100 and 0 < len(some) < len(everything) and version == same_version
    proc = run("--list", "-k", "^Reduction / sum")
    assert proc.returncode == 0 and "Reduction / sum [explicit, 1 thread(s)]" in proc.stdout


def test_end_to_end_writes_one_result_file_and_tables_of_cpp_definitions_in_torchs_format(tmp_path):
    """Definitions written as torch's suite writes them (tests/cpp_definitions.py: Python and C++, eager and
    TorchScript, the C++ TorchScript cases loading the Python model with torch::jit::load, forward and
    backward): all listed, and the C++ half of its modules and training run end to end, wall time and counts,
    into one result file and
    tables. A real compile (one program: the cases run share a global_setup), real valgrind. (The Python
    half's counts would cost a minute of valgrind start-up here; tests/test_runner.py and tests/test_cpp.py
    count Python.)"""
    out = tmp_path / "results.json"
    listing = run("--definitions", "cpp_definitions:BENCHMARKS", "--list")
    assert listing.returncode == 0, listing.stderr[-3000:]
    # Python: empty 1, add 2, Linear 2 (eager, TorchScript), training 4 (x forward, backward); C++ the same
    # and the C++-only overload line
    assert "19 cases" in listing.stdout and listing.stdout.count("C++") == 10, listing.stdout
    assert "training / simple [TorchScript Forward + Backward C++, 1 thread(s)]" in listing.stdout

    # the C++ cases of the two setups that share a global_setup: one program (a compile is ~20 s of CPU)
    proc = run("--definitions", "cpp_definitions:BENCHMARKS", "-k", r"^(nn Modules|training) .*C\+\+",
               "--min-run-time", "0.02", "--callgrind-repeats", "2", "--callgrind-number", "20", "--out", str(out),
               cpp_cache=tmp_path / "cpp")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert doc["schema"] == "torchbench_core.SuiteResults"
    assert doc["version"] == work_orders(definitions=cpp_definitions.BENCHMARKS)[1]
    by = {(tuple(c["label"]), c["autolabels"]["runtime"], c["autolabels"]["autograd"], c["autolabels"]["language"]): c
          for c in doc["cases"].values()}
    assert {key[3] for key in by} == {"C++"} and len(by) == 6, sorted(by)  # Linear 2, training 4
    for key, case in by.items():
        assert case["errors"] == [], (key, case["errors"])
        assert case["wall"]["raw_times"] and len(case["instructions"]) == 2 and min(case["instructions"]) > 0, key
        assert case["timer_args"]["language"] == "cpp"
    # the TorchScript model costs more than the eager module it was scripted from, backward more than forward
    linear = {runtime: by[(("nn Modules", "Linear"), runtime, "Forward", "C++")]["instructions"][0]
              for runtime in ("Eager", "TorchScript")}
    assert linear["Eager"] < linear["TorchScript"], linear
    simple = {autograd: by[(("training", "simple"), "Eager", autograd, "C++")]["instructions"][0]
              for autograd in ("Forward", "Forward + Backward")}
    assert simple["Forward"] < simple["Forward + Backward"], simple
    jit = by[(("training", "simple"), "TorchScript", "Forward + Backward", "C++")]["timer_args"]
    assert "torch::jit::load" in jit["setup"] and "y.toTensor().backward();" in jit["stmt"]
    assert len(list((tmp_path / "cpp").glob("timer_*"))) == 1  # one program per global_setup
    assert "Times are in" in proc.stdout and "instructions (baseline subtracted) per run" in proc.stdout
    assert "Eager Forward (C++)" in proc.stdout  # C++ columns, beside the Python ones when both run
    assert "instruction counts" in proc.stderr  # progress line


def test_a_failing_case_fails_the_command_but_keeps_the_others(tmp_path):
    out = tmp_path / "results.json"
    proc = run("--definitions", "callgrind_cases:FAILING_DEFINITIONS", "--mode", "wall", "--min-run-time", "0.02",
               "--out", str(out))
    assert proc.returncode == 2  # a failure; 1 is torchbench's "regression"
    doc = json.loads(out.read_text())
    by_label = {tuple(c["label"]): c for c in doc["cases"].values()}
    assert by_label[("ok", "add")]["wall"] is not None
    assert "NameError" in by_label[("broken",)]["errors"][0]
    assert "1 case(s) failed" in proc.stdout


def test_unknown_definitions_are_a_clear_error():
    proc = run("--definitions", "no_such_module:X", "--list")
    assert proc.returncode == 2 and "cannot load definitions 'no_such_module:X'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_no_cpp_compiler_is_a_clear_error_and_exit_2(tmp_path, monkeypatch):
    monkeypatch.setenv("CXX", "no-such-compiler")
    proc = run("-k", r"^Reduction / sum \[C\+\+", "--mode", "wall", "--out", str(tmp_path / "r.json"))
    assert proc.returncode == 2 and "'no-such-compiler' was not found" in proc.stderr, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
