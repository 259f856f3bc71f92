import json
import math
import pickle

import numpy as np
import pytest
from asv_runner.statistics import quantile_ci

import torchbench_core as tb
from torchbench_core.measurement import SCHEMA_VERSION, MeasurementFormatError

from conftest import measurement_pair

RNG = np.random.RandomState(1234)
SAMPLE_SETS = [
    [2.2e-6],
    [2.2e-6, 2.5e-6],
    [1e-6, 1.1e-6, 1.05e-6, 1.2e-6],
    list(RNG.lognormal(-13, 0.05, size=7)),
    list(RNG.lognormal(-13, 0.3, size=50)),  # wide: IQR warnings
    list(RNG.lognormal(-5, 0.15, size=200)),
    list(RNG.uniform(0.9e-9, 1.1e-9, size=31)),  # around one nanosecond
]


@pytest.mark.parametrize("times", SAMPLE_SETS)
@pytest.mark.parametrize("number", [1, 100])
def test_statistics_match_torch(times, number):
    """Same samples, same numbers: we compute with numpy, torch with torch.quantile."""
    ours, theirs = measurement_pair([t * number for t in times], number)
    assert ours.times == pytest.approx(theirs.times, rel=1e-12)
    assert ours.median == pytest.approx(theirs.median, rel=1e-12)
    assert ours.mean == pytest.approx(theirs.mean, rel=1e-12)
    assert ours.iqr == pytest.approx(theirs.iqr, rel=1e-9, abs=1e-18)
    assert ours.significant_figures == theirs.significant_figures
    assert ours.has_warnings == theirs.has_warnings
    assert ours.warnings == theirs._warnings
    for threshold in (0.01, 0.1, 0.25):
        assert ours.meets_confidence(threshold) == theirs.meets_confidence(threshold)


@pytest.mark.parametrize("times", [t for t in SAMPLE_SETS if len(t) > 1])
def test_repr_matches_torch_apart_from_the_class_line(times):
    ours, theirs = measurement_pair(times, label="add", sub_label="4 floats", description="ones(4)",
                                    setup="x = torch.ones(4)\ny = x", num_threads=2)
    ours_lines, their_lines = repr(ours).splitlines(), repr(theirs).splitlines()
    assert ours_lines[0].startswith("<torchbench_core.measurement.Measurement object at 0x")
    assert ours_lines[1:] == their_lines[1:]


def test_single_sample_repr_drops_torchs_stray_space():
    """torch prints '100 runs , 1 thread' for one sample; we print '100 runs, 1 thread'."""
    ours, theirs = measurement_pair([2e-4], 100)
    assert repr(theirs).splitlines()[-1] == "  1 measurement, 100 runs , 1 thread"
    assert repr(ours).splitlines()[-1] == "  1 measurement, 100 runs, 1 thread"
    assert repr(ours).splitlines()[2] == "  2.00 us"


def test_warning_thresholds():
    steady = tb.Measurement(1, [1.0, 1.01, 0.99, 1.0], tb.TaskSpec("s", "pass"))
    fluctuating = tb.Measurement(1, [0.7, 1.0, 1.0, 1.3], tb.TaskSpec("s", "pass"))
    gross = tb.Measurement(1, [1.0, 2.0, 0.5, 1.0], tb.TaskSpec("s", "pass"))
    assert not steady.has_warnings
    assert "system fluctuation" in fluctuating.warnings[0]
    assert "significant environmental influence" in gross.warnings[0]


def test_quantiles_and_median_ci():
    times = list(RNG.lognormal(0, 0.2, size=101))
    m = tb.Measurement(1, times, tb.TaskSpec("s", "pass"))
    assert m.quantile(0.5) == pytest.approx(m.median)
    assert m.quantile([0.25, 0.75]) == pytest.approx(list(np.quantile(times, [0.25, 0.75])))
    low, high = m.median_ci(0.99)
    assert low < m.median < high
    # Order-statistic bounds: both are samples, and agree with asv_runner's
    # quantile_ci (which asv uses for ci_99_a/b) on this sample size.
    assert low in times and high in times
    _, (asv_low, asv_high) = quantile_ci(times, 0.5, alpha_min=0.01)
    assert (low, high) == pytest.approx((asv_low, asv_high))
    narrow = m.median_ci(0.5)
    assert low <= narrow[0] <= narrow[1] <= high


def test_median_ci_needs_enough_samples():
    m = tb.Measurement(1, [1.0, 1.1, 0.9], tb.TaskSpec("s", "pass"))
    assert all(math.isnan(b) for b in m.median_ci(0.99))


def test_merge_matches_torch():
    a1, t1 = measurement_pair([2e-3, 2.1e-3], 1000, label="L", env="main")
    a2, t2 = measurement_pair([4e-4], 100, label="L", env="main")
    b1, u1 = measurement_pair([5e-3], 1000, label="L", env="branch")
    ours, theirs = tb.Measurement.merge([a1, b1, a2]), type(t1).merge([t1, u1, t2])
    assert [(m.env, m.number_per_run, m.raw_times) for m in ours] == [
        (m.task_spec.env, m.number_per_run, m.raw_times) for m in theirs
    ]


def test_env_is_forwarded_even_when_unset():
    m = tb.Measurement(1, [1.0], tb.TaskSpec("s", "pass"))
    assert m.env is None and m.stmt == "s" and m.num_threads == 1
    with pytest.raises(AttributeError):
        m.not_a_field


def test_json_round_trip_keeps_samples_spec_and_metadata():
    m = tb.Measurement(
        1000, [1.5e-3, 1.6e-3, 1.4e-3],
        tb.TaskSpec("torch.add(x, x)", "x = torch.ones(4)", label="add", sub_label="s",
                    description="d", env="main", num_threads=2),
        metadata={"commit": "abc", "shape": [4]},
    )
    back = tb.Measurement.from_json(m.to_json())
    assert back == m
    assert back.median == m.median and back.task_spec == m.task_spec
    doc = json.loads(m.to_json())
    assert doc["schema_version"] == SCHEMA_VERSION and doc["raw_times"] == m.raw_times


def test_pickle_round_trip():
    m = tb.Measurement(10, [1.0, 2.0], tb.TaskSpec("s", "pass", label="x"))
    m.median  # populate caches; they must not break pickling
    back = pickle.loads(pickle.dumps(m))
    assert back == m and back.median == m.median


def test_unserialisable_metadata_names_the_measurement():
    m = tb.Measurement(1, [1.0], tb.TaskSpec("s", "pass", label="L"), metadata={"x": object()})
    with pytest.raises(TypeError, match="'L'.*metadata"):
        m.to_json()


def _doc(**changes):
    doc = tb.Measurement(1, [1.0, 2.0], tb.TaskSpec("s", "pass")).to_dict()
    doc.update(changes)
    return doc


@pytest.mark.parametrize(
    "text, message",
    [
        ("{not json", "not valid JSON"),
        (json.dumps([1, 2]), "not a torchbench_core Measurement"),
        (json.dumps({"version": 2, "results": {}}), "not a torchbench_core Measurement"),
        (json.dumps(_doc(schema_version=SCHEMA_VERSION + 1)), "upgrade torchbench_core"),
        (json.dumps(_doc(schema_version="1")), "schema_version must be an integer"),
        (json.dumps(_doc(number_per_run=0)), "number_per_run must be a positive integer"),
        (json.dumps(_doc(raw_times=[])), "raw_times must be a non-empty list"),
        (json.dumps(_doc(raw_times=["1"])), "raw_times must be a non-empty list"),
        (json.dumps(_doc(raw_times=[-1.0])), "finite and non-negative"),
        (json.dumps(_doc(task_spec={"stmt": "s"})), r"lacks \['setup'\]"),
        (json.dumps(_doc(task_spec={"stmt": "s", "setup": "", "colour": 1})), r"unknown fields \['colour'\]"),
        (json.dumps(_doc(task_spec={"stmt": "s", "setup": "", "num_threads": 0})), "num_threads"),
        (json.dumps(_doc(task_spec={"stmt": "s", "setup": "", "env": 3})), "task_spec.env"),
        (json.dumps(_doc(metadata=[1])), "metadata must be an object"),
    ],
)
def test_corrupt_or_foreign_json_gets_a_clear_error(text, message):
    with pytest.raises(MeasurementFormatError, match=message) as info:
        tb.Measurement.from_json(text, source="results/m.json")
    assert str(info.value).startswith("results/m.json: ")


def test_measurement_files_are_written_atomically(tmp_path):
    ms = [tb.Measurement(1, [float(i + 1)], tb.TaskSpec(f"s{i}", "pass")) for i in range(3)]
    path = tmp_path / "sub" / "ms.json"
    tb.save_measurements(path, ms)
    assert tb.load_measurements(path) == ms

    bad = ms + [tb.Measurement(1, [float("nan")], tb.TaskSpec("nan", "pass"))]
    with pytest.raises(ValueError):
        tb.save_measurements(path, bad)
    assert tb.load_measurements(path) == ms  # the old file is intact
    assert [p.name for p in path.parent.iterdir()] == ["ms.json"]  # no temp file left


def test_a_corrupt_file_names_itself_and_the_entry(tmp_path):
    path = tmp_path / "ms.json"
    tb.save_measurements(path, [tb.Measurement(1, [1.0], tb.TaskSpec("s", "pass"))])
    doc = json.loads(path.read_text())
    doc["measurements"].append({"schema": "torchbench_core.Measurement", "schema_version": 1})
    path.write_text(json.dumps(doc))
    with pytest.raises(MeasurementFormatError, match=r"ms.json \[measurement 1\]: number_per_run"):
        tb.load_measurements(path)
    path.write_text(path.read_text()[:40])
    with pytest.raises(MeasurementFormatError, match="ms.json: not valid JSON"):
        tb.load_measurements(path)
