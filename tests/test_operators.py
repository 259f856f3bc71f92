"""operatorbench (torchbench_core.operators): recording, the log format, building inputs, the benchmark."""

import csv
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from torchbench_core.operators import LOGS, LogFormatError, OperatorLog, format_sample, parse_sample, suite_log
from torchbench_core.operators.bench import BenchOptions, benchmark, benchmark_operator, csv_header, skip_reason
from torchbench_core.operators.inputs import SampleSkipped, build_sample, resolve_operator
from torchbench_core.operators.record import OperatorInputsMode, computes, record_training

ROOT = Path(__file__).resolve().parents[1]
PYTORCH_FORMAT = ROOT / "tests" / "data" / "operator_inputs" / "pytorch_format.txt"
SEED_COLUMNS = ["operator", "inductor 20th", "inductor 50th", "inductor 80th", "elapsed", "eager abs", "inductor abs"]


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "torchbench_core.operators", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


# -- the format ------------------------------------------------------------------------------------------

def test_a_log_in_pytorchs_own_format_loads_with_at_least_95_percent_of_its_samples_built():
    log = OperatorLog.read(PYTORCH_FORMAT)
    assert "aten.sum.dim_IntList" in log and "aten.sum.SymInt" not in log  # renamed as PyTorch's loader does
    assert log.calls("aten.clone.default") == 3  # the two blocks of one operator merged
    built, skipped = 0, []
    for name in log:
        for text, _ in log.samples(name):
            try:
                args, kwargs = build_sample(name, text, dtype=None)
            except SampleSkipped as e:
                skipped.append(str(e))
                continue
            resolve_operator(name)(*args, **kwargs)  # every built sample runs in eager
            built += 1
    assert built / (built + len(skipped)) >= 0.95, skipped
    assert skipped == ["a sparse input, only dense ones are built: ST([64, 64], f16, torch.sparse_coo, True, 8)"]


def test_each_line_reads_back_as_written():
    for line in PYTORCH_FORMAT.read_text().splitlines():
        if line.startswith("cnt: "):
            text = line.split(", ", 1)[1]
            assert format_sample(*parse_sample(text)) == text


def test_a_log_is_parsed_not_evaluated():
    with pytest.raises(ValueError, match="unexpected"):
        parse_sample("((__import__('os').system('true'),), {})")
    with pytest.raises(ValueError, match="takes a size list and a dtype"):
        parse_sample("((T(5),), {})")


def test_a_malformed_log_names_its_file_and_line(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("Operator: aten.add.Tensor\ncnt: 1, ((T([2], f32), T([2], f32)), {})\ncount 3\n")
    with pytest.raises(LogFormatError, match=r"bad\.txt:3: expected 'Operator: <overload>'"):
        OperatorLog.read(bad)
    bad.write_text("cnt: 1, ((T([2], f32),), {})\n")
    with pytest.raises(LogFormatError, match=r"bad\.txt:1"):
        OperatorLog.read(bad)


def test_writing_is_atomic_and_reads_back(tmp_path):
    log = OperatorLog.read(PYTORCH_FORMAT)
    log.write(tmp_path / "copy.txt")
    again = OperatorLog.read(tmp_path / "copy.txt")
    assert again.operators == log.operators
    assert not list(tmp_path.glob("*.partial"))


# -- building inputs --------------------------------------------------------------------------------------

def test_index_like_inputs_are_valid_for_their_operator():
    args, _ = build_sample("aten.embedding.default", "((T([50, 8], f32), T([4, 64], i64)), {})")
    assert args[1].min() >= 0 and args[1].max() < 50 and args[1].unique().numel() > 10
    args, _ = build_sample("aten.gather.default", "((T([6, 7], f32), 1, T([6, 40], i64)), {})")
    assert args[2].max() < 7
    args, _ = build_sample("aten.nll_loss_forward.default", "((T([64, 9], f32), T([64], i64), None, 1, -100), {})")
    assert args[1].max() < 9
    args, _ = build_sample("aten.embedding_dense_backward.default",
                           "((T([4, 16, 8], f32), T([4, 16], i64), 30, 0, False), {})")
    assert 10 <= args[1].max() < 30
    args, _ = build_sample("aten.index.Tensor", "((T([5, 300], f32), [T([64], i64), T([64], i64)]), {})")
    assert args[1][0].max() < 5 and args[1][1].max() < 300 and args[1][1].max() >= 5
    # pooling indices are the forward's own: the backward gives what the forward's gradient would
    text = ("((T([1, 1, 2, 2], f32), T([1, 1, 4, 4], f32), [2, 2], [2, 2], [0, 0], [1, 1], False, "
            "T([1, 1, 2, 2], i64)), {})")
    args, _ = build_sample("aten.max_pool2d_with_indices_backward.default", text)
    assert torch.equal(args[-1], torch.ops.aten.max_pool2d_with_indices(args[1], [2, 2], [2, 2])[1])


def test_strides_dtypes_and_memory_formats_are_as_asked():
    args, kwargs = build_sample("aten.addmm.default",
                                "((T([8], f16), T([4, 8], f16), T([8, 8], f16, stride=(1, 8))), {'dtype': f16})",
                                dtype=torch.float32)
    assert args[2].stride() == (1, 8) and args[2].dtype == torch.float32 and kwargs["dtype"] == torch.float32
    args, _ = build_sample("aten.embedding.default", "((T([2, 8], f32), T([4, 16], i64, stride=(0, 1))), {})",
                           dtype=torch.bfloat16)
    assert args[1].stride() == (0, 1) and args[1].dtype == torch.int64 and args[0].dtype == torch.bfloat16
    args, _ = build_sample("aten.relu.default", "((T([2, 3, 4, 5], f32),), {})", channels_last=True)
    assert args[0].is_contiguous(memory_format=torch.channels_last)
    a, _ = build_sample("aten.relu.default", "((T([64], f32),), {})")
    b, _ = build_sample("aten.relu.default", "((T([64], f32),), {})")
    assert torch.equal(a[0], b[0])  # seeded per sample: two runs build the same inputs


# -- recording ----------------------------------------------------------------------------------------------

def _tiny_cnn():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU(),
                                torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(4 * 3 * 3, 5))
    return model, (torch.randn(2, 3, 8, 8),)


def test_recording_a_training_step_logs_forward_and_backward_operators_with_counts_and_strides():
    model, inputs = _tiny_cnn()
    log = record_training(model, inputs)
    assert {"aten.convolution.default", "aten.convolution_backward.default", "aten.native_batch_norm.default",
            "aten.native_batch_norm_backward.default", "aten.threshold_backward.default",
            "aten.max_pool2d_with_indices_backward.default", "aten.addmm.default"} <= set(log)
    # views (t, view) compute nothing: left out, as PyTorch's recorder leaves them
    assert "aten.t.default" not in log and "aten.view.default" not in log
    (addmm, count), = log.samples("aten.addmm.default")
    assert addmm == "((T([5], f32), T([2, 36], f32), T([36, 5], f32, stride=(1, 36))), {})" and count == 1
    assert not computes(torch.ops.aten.t.default) and computes(torch.ops.aten.add_.Tensor)


def test_the_recorder_counts_repeated_calls():
    x = torch.ones(3)
    with OperatorInputsMode() as mode:
        for _ in range(4):
            torch.add(x, x)
    assert mode.log().samples("aten.add.Tensor") == [("((T([3], f32), T([3], f32)), {})", 4)]


def test_a_users_model_is_recorded_through_module_factory(tmp_path):
    (tmp_path / "mymodels.py").write_text(textwrap.dedent("""
        import torch
        def make():
            return torch.nn.Sequential(torch.nn.Linear(6, 3), torch.nn.GELU()), (torch.randn(4, 6),)
        """))
    proc = subprocess.run([sys.executable, "-m", "torchbench_core.operators", "record", "--factory", "mymodels:make",
                           "--name", "Mine", "--out", str(tmp_path / "logs")], capture_output=True, text=True,
                          cwd=tmp_path, env={"PYTHONPATH": f"{tmp_path}:{ROOT}", "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    log = OperatorLog.read(tmp_path / "logs" / "Mine_training.txt")
    assert {"aten.addmm.default", "aten.gelu.default", "aten.gelu_backward.default"} <= set(log)
    bad = _cli("record", "--factory", "mymodels", "--name", "X", cwd=tmp_path)
    assert bad.returncode == 2 and "expected module:factory" in bad.stderr
    (tmp_path / "broken.py").write_text("def make():\n    raise RuntimeError('no such weights')\n")
    broken = subprocess.run([sys.executable, "-m", "torchbench_core.operators", "record", "--factory", "broken:make",
                             "--name", "B", "--out", str(tmp_path / "logs")], capture_output=True, text=True,
                            cwd=tmp_path, env={"PYTHONPATH": f"{tmp_path}:{ROOT}", "PATH": "/usr/bin:/bin"})
    assert broken.returncode == 2  # an unexpected error is a failure (2), never a regression (1)
    assert "RuntimeError: no such weights" in broken.stderr and "stopped on the unexpected error" in broken.stderr


def test_the_shipped_logs_are_what_record_regenerates(tmp_path):
    pytest.importorskip("transformers", reason="the test extra installs transformers")
    proc = _cli("record", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    shipped = sorted(p.name for p in (LOGS / "huggingface").glob("*.txt"))
    assert sorted(p.name for p in tmp_path.glob("*.txt")) == shipped
    for name in shipped:
        assert (tmp_path / name).read_text() == (LOGS / "huggingface" / name).read_text(), name


def test_the_recorded_models_cover_at_least_40_operators_that_compute():
    log = suite_log("huggingface")
    assert len(log.sources) == 4
    computing = [name for name in log if computes(resolve_operator(name)) and name != "aten._unsafe_view.default"]
    assert len(computing) >= 40, computing


# -- the benchmark ------------------------------------------------------------------------------------------

def test_skip_rules_say_why():
    assert skip_reason("aten._unsafe_view.default") == "computes nothing (a view or constructor)"
    assert "no inductor lowering" in skip_reason("aten.div_.Scalar")
    assert "is not an operator of torch" in skip_reason("aten.no_such_op.default")
    assert skip_reason("aten.add.Tensor") is None


def test_a_sample_that_fails_is_counted_with_its_stage_and_the_others_go_on(tmp_path):
    log_file = tmp_path / "log.txt"
    log_file.write_text("Operator: aten.add.Tensor\n"
                        "cnt: 1, ((T([2, 3], f32), T([4, 5], f32)), {})\n"  # shapes that do not broadcast
                        "cnt: 1, ((T([2, 3], f32), T([2, 3], f32)), {})\n"
                        "cnt: 1, ((T([2, 3], f32), ST([2, 3], f32, torch.sparse_coo, True, 2)), {})\n")
    result = benchmark_operator(OperatorLog.read(log_file), "aten.add.Tensor",
                                BenchOptions(max_samples=3, repeats=1, min_run_time=0.001))
    assert [s.index for s in result.samples] == [1]
    assert result.failed[0][0] == 0 and result.failed[0][1].startswith("eager: RuntimeError")
    assert result.skipped[0][0] == 2 and "sparse" in result.skipped[0][1]
    only_last = benchmark_operator(OperatorLog.read(log_file), "aten.add.Tensor",
                                   BenchOptions(start_idx=1, max_samples=1, accuracy_only=True))
    assert [s.index for s in only_last.samples] == [1] and only_last.samples[0].eager is None
    assert only_last.samples[0].accurate


def test_the_csv_has_the_seeds_columns_and_a_ratio_group_for_two_backends():
    assert csv_header(["inductor"])[:7] == SEED_COLUMNS
    two = csv_header(["inductor", "autotune"])
    assert two[1:10] == [f"{b} {q}th" for b in ("inductor", "autotune", "inductor/autotune") for q in (20, 50, 80)]
    assert two[10:14] == ["elapsed", "eager abs", "inductor abs", "autotune abs"]


def test_a_tiny_benchmark_end_to_end_writes_the_csv_a_compare_table_and_a_profile(tmp_path):
    proc = _cli("bench", "--inp-file", str(PYTORCH_FORMAT), "--op", "aten.add.Tensor", "--op", "aten.gather.default",
                "--op", "aten._unsafe_view.default", "--max-samples", "2", "--repeats", "2", "--min-run-time",
                "0.01", "--compare", "--profile", str(tmp_path / "log"), "--csv", str(tmp_path / "out.csv"),
                cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    with open(tmp_path / "out.csv") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0])[:7] == SEED_COLUMNS
    assert [r["operator"] for r in rows] == ["aten.add.Tensor", "aten.gather.default"]
    for row in rows:
        assert 0 < float(row["inductor 20th"]) <= float(row["inductor 50th"]) <= float(row["inductor 80th"])
        assert float(row["eager abs"]) > 0 and float(row["compile"]) > 0
    assert rows[0]["samples"] == "2" and rows[1]["samples"] == "1"
    assert "[---" in proc.stdout and "eager" in proc.stdout and "inductor" in proc.stdout  # the Compare table
    assert "operators skipped, computes nothing (a view or constructor): 1" in proc.stdout
    assert "samples: 3 built, 0 skipped, 0 failed" in proc.stdout
    sparse = _cli("bench", "--inp-file", str(PYTORCH_FORMAT), "--op", "aten.add_.Tensor", "--accuracy-only", cwd=tmp_path)
    assert sparse.returncode == 0 and "samples skipped, a sparse input, only dense ones are built: 1" in sparse.stdout
    traces = list((tmp_path / "log").glob("operator_aten.add.Tensor/*.pt.trace.json.gz"))
    assert len(traces) == 1


def test_bad_input_exits_2_with_the_reason(tmp_path):
    proc = _cli("bench", "--inp-file", str(PYTORCH_FORMAT), "--op", "aten.nope.default", cwd=tmp_path)
    assert proc.returncode == 2 and "not in the logs: aten.nope.default" in proc.stderr
    (tmp_path / "bad.txt").write_text("Operator: aten.add.Tensor\nnonsense\n")
    proc = _cli("bench", "--inp-file", str(tmp_path / "bad.txt"), cwd=tmp_path)
    assert proc.returncode == 2 and "bad.txt:2" in proc.stderr
    proc = _cli("bench", "--suite", "nope", cwd=tmp_path)
    assert proc.returncode == 2 and "no recorded suite 'nope'" in proc.stderr
    with pytest.raises(KeyError, match="unknown inductor configuration"):
        benchmark(OperatorLog.read(PYTORCH_FORMAT), BenchOptions(inductor_configs=("fast",)))


def test_the_tracked_suite_skips_what_cannot_be_timed_and_serves_an_operators_rows_from_one_measurement(monkeypatch):
    sys.path.insert(0, str(ROOT))
    try:
        from benchmarks import operators as suite
    finally:
        sys.path.remove(str(ROOT))
    assert len(suite.OPERATORS) == len(suite_log("huggingface")) >= 40
    chosen = ["aten.relu.default", "aten._unsafe_view.default"]
    monkeypatch.setattr(suite, "OPERATORS", chosen)
    reasons = suite.setup_cache()
    assert reasons == {"aten.relu.default": None, "aten._unsafe_view.default": "computes nothing (a view or constructor)"}
    with pytest.raises(NotImplementedError, match="computes nothing"):  # asv records it as skipped
        suite.OperatorEager().setup(reasons, suite.LABEL, "aten._unsafe_view.default", "eager", 1)
    eager, ratio = suite.OperatorEager(), suite.CompiledOverEager()
    eager.setup(reasons, suite.LABEL, "aten.relu.default", "eager", 1)
    seconds = eager.track_eager_time(reasons, suite.LABEL, "aten.relu.default", "eager", 1)
    fractions = [ratio.track_compiled_over_eager(reasons, suite.LABEL, "aten.relu.default", q, 1)
                 for q in ("p20", "p50", "p80")]
    result = suite._measured("aten.relu.default")  # the one measurement all four rows read
    assert seconds == result.eager_geomean() > 0
    assert fractions == [1 / s for s in result.speedup_quantiles()[0]]
    assert fractions[0] >= fractions[1] >= fractions[2] > 0  # a higher speedup percentile: a lower fraction
