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
from torchbench_core.operators.inputs import INDEX_LIKE, SampleSkipped, build_sample, resolve_operator
from torchbench_core.operators.log_format import TensorSpec
from torchbench_core.operators.record import OperatorInputsMode, computes, record_training

ROOT = Path(__file__).resolve().parents[1]
PYTORCH_FORMAT = ROOT / "tests" / "data" / "operator_inputs" / "pytorch_format.txt"
# PyTorch's own published logs (benchmarks/dynamo/microbenchmarks/operator_inp_logs, BSD: see the folder's
# NOTICE); its torchbench_train logs are left out, an independent check (docs/operators.md)
PYTORCH_LOGS = ROOT / "tests" / "data" / "pytorch" / "operator_inp_logs"
# index-like operators PyTorch's hf_train and timm_train logs lack: embedding bags (DLRM's own lines among them)
INDEX_LIKE_FIXTURE = ROOT / "tests" / "data" / "operator_inputs" / "index_like.txt"
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


# -- PyTorch's own logs ------------------------------------------------------------------------------------

def _samples(*paths):
    log = OperatorLog.read(*paths)
    return [(name, text) for name in log for text, _ in log.samples(name)]


def _index_like(name: str) -> bool:
    return name.split(".")[1] in INDEX_LIKE


@pytest.mark.parametrize("suite, samples", [("hf_train", 1960), ("timm_train", 9738)])
def test_every_sample_of_pytorchs_published_logs_is_built_or_skipped_with_its_reason(suite, samples):
    built, skipped = 0, []
    everything = _samples(PYTORCH_LOGS / suite)
    assert len(everything) == samples  # the fetched logs, whole
    for name, text in everything:
        try:
            build_sample(name, text, device="meta")  # shapes, strides, dtypes and index rules; no values
            built += 1
        except SampleSkipped as e:
            why, _, detail = str(e).partition(": ")
            assert why and detail, e
            skipped.append(str(e))
    assert built / len(everything) >= 0.99, skipped


def _index_tensors(args) -> list[torch.Tensor]:
    flat = [a for arg in args for a in (arg if isinstance(arg, list) else [arg])]
    return [a for a in flat if isinstance(a, torch.Tensor) and a.dtype in (torch.int64, torch.int32)]


def _run_index_like(samples) -> int:
    """Every index-like sample built on the CPU and run eagerly; each index tensor that has room for two values
    has two (indices drawn, not a constant)."""
    ran = 0
    for name, text in samples:
        args, kwargs = build_sample(name, text)
        resolve_operator(name)(*args, **kwargs)
        for index in _index_tensors(args):
            distinct = index.untyped_storage().nbytes() // index.element_size()
            if distinct > 1 and index.numel() > 1 and index.max() > 0:
                assert index.unique().numel() > 1, (name, text)
        ran += 1
    return ran


def _spec_numel(text: str) -> int:
    args, kwargs = parse_sample(text)
    leaves = [*args, *kwargs.values()]
    leaves = [v for leaf in leaves for v in (leaf if isinstance(leaf, list) else [leaf])]
    return sum(int(torch.tensor(v.size).prod()) for v in leaves if isinstance(v, TensorSpec))


def test_index_like_samples_of_pytorchs_logs_run_eagerly_with_drawn_indices():
    """The quick pass: index-like samples of up to 2**22 elements, and each operator's smallest (all of them: the
    slow test below)."""
    index_like = [(n, t) for n, t in _samples(PYTORCH_LOGS / "hf_train", PYTORCH_LOGS / "timm_train")
                  if _index_like(n)]
    smallest = {n: min((t for m, t in index_like if m == n), key=_spec_numel) for n, _ in index_like}
    samples = [(n, t) for n, t in index_like if _spec_numel(t) <= 2 ** 22 or smallest[n] == t]
    assert {n.split(".")[1] for n, _ in samples} >= {
        "embedding", "embedding_dense_backward", "gather", "index", "index_add", "index_add_", "index_put",
        "index_select", "max_pool2d_with_indices_backward", "nll_loss_forward", "nll_loss_backward", "scatter"}
    assert _run_index_like(samples) == len(samples) >= 150
    # ids over the whole dimension they index (Longformer's index_add_, scaled down a hundredfold: not 0-9)
    args, _ = build_sample("aten.index_add_.default", "((T([7864], f16), 0, T([11796], i64), T([11796], f16)), {})")
    assert args[2].max() == 7863 and args[2].unique().numel() > 5000


def _index_like_samples() -> list:
    samples = [(n, t) for n, t in _samples(PYTORCH_LOGS / "hf_train", PYTORCH_LOGS / "timm_train")
               if _index_like(n)]
    assert len(samples) == 280 and len({n for n, _ in samples}) == 12  # the fetched logs' index-like samples
    return samples


def test_each_index_like_operator_of_pytorchs_logs_runs_eagerly():
    """Each of the 12 index-like operators' first sample, and every 7th sample beside (the whole 280 take 95 s:
    the next test, with -m validation)."""
    samples = _index_like_samples()
    firsts = {n: i for i, (n, _) in reversed(list(enumerate(samples)))}
    chosen = [s for i, s in enumerate(samples) if i in firsts.values() or i % 7 == 0]
    assert _run_index_like(chosen) == len(chosen) >= 50


@pytest.mark.validation
def test_every_index_like_sample_of_pytorchs_logs_runs_eagerly():
    samples = _index_like_samples()
    assert _run_index_like(samples) == len(samples) == 280


def test_embedding_bags_and_the_other_index_like_operators_the_logs_lack_run_with_valid_offsets_and_ids():
    samples = _samples(INDEX_LIKE_FIXTURE)
    assert all(_index_like(n) for n, _ in samples)
    assert _run_index_like(samples) == len(samples)
    # DLRM's sample: ids over the table's 965 rows, offsets from 0, never decreasing, within the ids
    args, _ = build_sample("aten._embedding_bag.default", samples[0][1])
    ids, offsets = args[1], args[2]
    assert ids.min() == 0 and ids.max() == 964 and ids.unique().numel() > 900
    assert offsets[0] == 0 and bool((offsets.diff() >= 0).all()) and offsets[-1] <= ids.numel()
    assert offsets.unique().numel() > 1000 * 0.9
    # include_last_offset: the last offset closes the last bag at the end of the ids
    args, _ = build_sample("aten._embedding_bag.default", samples[1][1])
    assert args[2][0] == 0 and args[2][-1] == args[1].numel() == 4000
    # the backward's offset2bag names each id's bag, as the offsets cut them
    name, text = next((n, t) for n, t in samples if "per_sample_weights" in n)
    args, _ = build_sample(name, text)
    offsets, bag_of = args[3], args[4]
    assert torch.equal(bag_of, torch.bucketize(torch.arange(bag_of.numel()), offsets, right=True) - 1)
    # a sparse tensor's indices: row i below size[i]
    text = next(t for n, t in samples if "[40, 50]" in t)
    args, _ = build_sample("aten._sparse_coo_tensor_with_dims_and_tensors.default", text)
    assert args[3][0].max() == 39 and args[3][1].max() == 49


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
