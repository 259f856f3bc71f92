import numpy as np
import pytest
import torch
import torch.utils.benchmark as torch_benchmark
from torch.utils.benchmark.op_fuzzers import binary as torch_binary
from torch.utils.benchmark.op_fuzzers import spectral as torch_spectral
from torch.utils.benchmark.op_fuzzers import unary as torch_unary
from torch.utils.benchmark.utils import fuzzer as torch_fuzzer

import torchbench_core as tb
from torchbench_core.op_fuzzers import BinaryOpFuzzer, SpectralOpFuzzer, UnaryOpFuzzer


@pytest.fixture
def torch_fuzzers_repaired(monkeypatch):
    """torch 2.13's dict check is inverted (it rejects normalised dicts); put
    the intended check back so torch can serve as the reference."""
    original = torch_fuzzer.FuzzedParameter._check_distribution

    def fixed(self, distribution):
        if isinstance(distribution, dict):
            if abs(sum(distribution.values()) - 1) > 1e-5:
                raise AssertionError("Distribution is not normalized")
            return distribution
        return original(self, distribution)

    monkeypatch.setattr(torch_fuzzer.FuzzedParameter, "_check_distribution", fixed)


def test_torch_2_13_op_fuzzers_fail_at_construction_ours_work():
    with pytest.raises(AssertionError, match="not normalized"):
        torch_binary.BinaryOpFuzzer(seed=0)
    with pytest.raises(AssertionError, match="not normalized"):
        torch_unary.UnaryOpFuzzer(seed=0)
    with pytest.raises(AssertionError, match="not normalized"):
        torch_spectral.SpectralOpFuzzer(seed=0)
    for fuzzer in (BinaryOpFuzzer(seed=0), UnaryOpFuzzer(seed=0), SpectralOpFuzzer(seed=0)):
        tensors, properties, params = next(fuzzer.take(1))
        assert set(tensors) == set(properties) and "x" in tensors


def assert_same_cases(ours, theirs, compare_tensors):
    for (t0, p0, params0), (t1, p1, params1) in zip(ours, theirs, strict=True):
        assert params0 == params1
        for name in compare_tensors:
            assert t0[name].shape == t1[name].shape and t0[name].stride() == t1[name].stride()
            assert torch.equal(t0[name], t1[name])
            assert p0[name]["numel"] == p1[name]["numel"]
            assert list(p0[name]["order"]) == list(p1[name]["order"])
            assert p0[name]["is_contiguous"] == p1[name]["is_contiguous"]


@pytest.mark.parametrize("seed", [0, 17])
def test_unary_and_spectral_fuzzers_reproduce_torchs_cases(torch_fuzzers_repaired, seed):
    """Same seed, same draws: parameters and tensor values equal a working torch fuzzer."""
    assert_same_cases(UnaryOpFuzzer(seed=seed).take(8), torch_unary.UnaryOpFuzzer(seed=seed).take(8), ["x"])
    assert_same_cases(
        SpectralOpFuzzer(seed=seed, probability_regular=0.5).take(8),
        torch_spectral.SpectralOpFuzzer(seed=seed, probability_regular=0.5).take(8),
        ["x"],
    )


def test_binary_fuzzer_parameters_match_torch_and_y_uses_its_own_steps(torch_fuzzers_repaired):
    """torch builds y with x's steps (y_step_* drawn, then unused). We use y's."""
    ours = list(BinaryOpFuzzer(seed=3).take(30))
    theirs = list(torch_binary.BinaryOpFuzzer(seed=3).take(30))
    assert [p for *_, p in ours] == [p for *_, p in theirs]
    assert torch.equal(ours[0][0]["x"], theirs[0][0]["x"])
    differing = 0
    for (_, props, params), (_, torch_props, _) in zip(ours, theirs):
        dim = params["dim"]
        assert props["y"]["steps"] == tuple(params[f"y_step_{i}"] for i in range(3))[:dim]
        assert torch_props["y"]["steps"] == tuple(params[f"x_step_{i}"] for i in range(3))[:dim]
        differing += props["y"]["steps"] != torch_props["y"]["steps"]
    assert differing > 0


def test_parameter_distributions_match_torch_draw_for_draw(torch_fuzzers_repaired):
    specs = [
        dict(name="a", minval=16, maxval=16 * 1024, distribution="loguniform"),
        dict(name="b", minval=0, maxval=9, distribution="uniform"),
        dict(name="c", minval=0.5, maxval=2.5, distribution="uniform"),
        dict(name="d", distribution={1: 0.5, 2: 0.3, "three": 0.2}),
    ]
    for spec in specs:
        s0, s1 = np.random.RandomState(5), np.random.RandomState(5)
        ours, theirs = tb.FuzzedParameter(**spec), torch_benchmark.FuzzedParameter(**spec)
        a = [ours.sample(s0) for _ in range(2000)]
        b = [theirs.sample(s1) for _ in range(2000)]
        assert a == b, spec["name"]


def test_distribution_shapes():
    state = np.random.RandomState(0)
    log = [tb.FuzzedParameter("k", 1, 10_000, "loguniform").sample(state) for _ in range(20_000)]
    assert min(log) >= 1 and max(log) <= 10_000 and all(isinstance(v, int) for v in log)
    # Uniform in log space: each decade holds about a quarter of the samples.
    decades = np.histogram(np.log10(log), bins=[0, 1, 2, 3, 4.01])[0] / len(log)
    assert np.allclose(decades, 0.25, atol=0.02)
    ints = [tb.FuzzedParameter("u", 3, 5, "uniform").sample(state) for _ in range(3000)]
    assert set(ints) == {3, 4, 5}  # both bounds inclusive
    choice = [tb.FuzzedParameter("c", distribution={"a": 0.9, "b": 0.1}).sample(state) for _ in range(5000)]
    assert abs(choice.count("b") / 5000 - 0.1) < 0.02


def seed_tutorial_fuzzer(lib, seed=0):
    return lib.Fuzzer(
        parameters=[
            lib.FuzzedParameter("k0", minval=1, maxval=10000, distribution="loguniform"),
            lib.FuzzedParameter("k1", minval=1, maxval=10000, distribution="loguniform"),
        ],
        tensors=[
            lib.FuzzedTensor("x", size=("k0", "k1"), min_elements=128, max_elements=10_000_000, probability_contiguous=0.6)
        ],
        seed=seed,
    )


def test_seed_tutorial_example_reproduces_torch():
    ours = list(seed_tutorial_fuzzer(tb).take(10))
    theirs = list(seed_tutorial_fuzzer(torch_benchmark).take(10))
    assert ours[0][2] == {"k0": 725, "k1": 257}  # the tutorial's printed first case
    assert_same_cases(ours, theirs, ["x"])


def test_take_is_reproducible_and_leaves_the_global_rng_alone():
    fuzzer = seed_tutorial_fuzzer(tb, seed=11)
    torch.manual_seed(123)
    before = torch.get_rng_state()
    first = list(fuzzer.take(4))
    assert torch.equal(torch.get_rng_state(), before)
    second = list(fuzzer.take(4))
    for (t0, _, p0), (t1, _, p1) in zip(first, second):
        assert p0 == p1 and torch.equal(t0["x"], t1["x"])
    # torch reseeds the global RNG under the caller.
    list(seed_tutorial_fuzzer(torch_benchmark, seed=11).take(1))
    assert not torch.equal(torch.get_rng_state(), before)


def test_custom_constructor_is_reproducible_matches_torch_and_keeps_global_rng():
    def constructor(size, dtype, **params):
        return torch.randn(size, dtype=dtype) * params["scale"]

    def make(lib):
        return lib.Fuzzer(
            parameters=[lib.FuzzedParameter("n", 4, 64, "uniform"), lib.FuzzedParameter("scale", 1, 3, "uniform")],
            tensors=[lib.FuzzedTensor("x", size=("n",), tensor_constructor=constructor, probability_contiguous=1)],
            seed=2,
        )

    torch.manual_seed(0)
    before = torch.get_rng_state()
    ours = list(make(tb).take(5))
    assert torch.equal(torch.get_rng_state(), before)
    assert_same_cases(ours, make(torch_benchmark).take(5), ["x"])


def test_strides_permutations_and_dim_parameter():
    fuzzer = tb.Fuzzer(
        parameters=[tb.FuzzedParameter("dim", distribution={2: 1.0}), tb.FuzzedParameter("k", 8, 8, "uniform")],
        tensors=[tb.FuzzedTensor("x", size=("k", "k", 5), steps=(2, 1, 1), dim_parameter="dim", probability_contiguous=0.0)],
        seed=0,
    )
    tensors, props, params = next(fuzzer.take(1))
    x = tensors["x"]
    assert x.shape == (8, 8)  # dim_parameter truncated the third size
    assert not x.is_contiguous() and props["x"]["steps"] == (2, 1)
    assert list(props["x"]["order"]) == [1, 0]  # the only non-identity order in 2D
    assert props["x"]["numel"] == 64 and props["x"]["dtype"] == "torch.float32"


def test_dtype_and_device():
    fuzzer = tb.Fuzzer(
        parameters=[tb.FuzzedParameter("n", 4, 8, "uniform")],
        tensors=[tb.FuzzedTensor("i", size=("n",), dtype=torch.int32, device="cpu")],
        seed=0,
    )
    tensors, props, _ = next(fuzzer.take(1))
    assert tensors["i"].dtype == torch.int32 and tensors["i"].min() >= 1 and tensors["i"].max() < 127
    assert tb.FuzzedTensor("g", size=(4,), cuda=True)._device == torch.device("cuda")


def test_strict_parameter_keeps_its_value_across_retries():
    def make(strict):
        return tb.Fuzzer(
            parameters=[
                tb.FuzzedParameter("p", distribution={0: 0.5, 1: 0.5}, strict=strict),
                tb.FuzzedParameter("q", 0, 1, "uniform"),
            ],
            tensors=[],
            constraints=[lambda params: params["p"] == 0],
            seed=1,
        )

    # Non-strict: the rejected p is redrawn, so generation always succeeds.
    assert all(params["p"] == 0 for *_, params in make(False).take(20))
    # Strict: a draw of p == 1 is kept for every retry, so it cannot succeed.
    with pytest.raises(ValueError, match="constraint #0"):
        list(make(True).take(20))


@pytest.mark.parametrize(
    "spec, message",
    [
        (dict(name="p", minval=1, maxval=2, distribution="gaussian"), "'p': unknown distribution 'gaussian'"),
        (dict(name="p", distribution={1: 0.5, 2: 0.4}), "'p': distribution is not normalized"),
        (dict(name="p", distribution={1: 1.5, 2: -0.5}), "'p': probabilities must be non-negative"),
        (dict(name="p", minval=1, distribution={1: 1.0}), "'p': minval and maxval must be None"),
        (dict(name="p", minval=1, distribution="uniform"), "'p': 'uniform' needs both minval and maxval"),
        (dict(name="p", minval=5, maxval=1, distribution="uniform"), "'p': minval 5 > maxval 1"),
        (dict(name="p", minval=0, maxval=8, distribution="loguniform"), "'p': loguniform needs minval > 0"),
    ],
)
def test_bad_parameter_specs_name_the_parameter(spec, message):
    with pytest.raises(ValueError, match=message):
        tb.FuzzedParameter(**spec)


def test_alias_cycles_and_unknown_aliases_fail_at_construction():
    """torch finds a cycle only while generating; we reject the spec itself."""
    with pytest.raises(ValueError, match="ParameterAlias cycle detected: a -> b -> a"):
        tb.Fuzzer(
            parameters=[
                tb.FuzzedParameter("a", distribution={tb.ParameterAlias("b"): 1.0}),
                tb.FuzzedParameter("b", distribution={tb.ParameterAlias("a"): 1.0}),
            ],
            tensors=[],
        )
    with pytest.raises(ValueError, match=r"'a' aliases unknown parameter\(s\) \['nope'\]"):
        tb.Fuzzer(parameters=[tb.FuzzedParameter("a", distribution={tb.ParameterAlias("nope"): 1.0})], tensors=[])


def test_alias_chains_resolve():
    fuzzer = tb.Fuzzer(
        parameters=[
            tb.FuzzedParameter("c", distribution={tb.ParameterAlias("b"): 1.0}),
            tb.FuzzedParameter("b", distribution={tb.ParameterAlias("a"): 1.0}),
            tb.FuzzedParameter("a", 3, 3, "uniform"),
        ],
        tensors=[],
    )
    assert next(fuzzer.take(1))[2] == {"a": 3, "b": 3, "c": 3}


def test_unsatisfiable_constraints_say_which_rejected():
    def never(params):
        return False

    fuzzer = tb.Fuzzer(parameters=[tb.FuzzedParameter("n", 1, 4, "uniform")], tensors=[], constraints=[never], seed=4)
    with pytest.raises(ValueError, match=r"1000 attempts \(seed 4\).*constraint #0 never \(1000x\)"):
        next(fuzzer.take(1))
    too_big = tb.Fuzzer(
        parameters=[tb.FuzzedParameter("n", 100, 200, "uniform")],
        tensors=[tb.FuzzedTensor("x", size=("n",), max_elements=10)],
    )
    with pytest.raises(ValueError, match="tensor 'x': more than max_elements=10"):
        next(too_big.take(1))
    assert fuzzer.rejection_rate == 1.0


def test_name_clashes_and_wrong_types():
    with pytest.raises(ValueError, match="Duplicate names in parameters and tensors"):
        tb.Fuzzer(parameters=[tb.FuzzedParameter("x", 1, 2, "uniform")], tensors=[tb.FuzzedTensor("x", size=(1,))])
    with pytest.raises(ValueError, match="Duplicate parameter names"):
        tb.Fuzzer(parameters=[tb.FuzzedParameter("n", 1, 2, "uniform")] * 2, tensors=[])
    with pytest.raises(ValueError, match="parameters must hold FuzzedParameter"):
        tb.Fuzzer(parameters=["n"], tensors=[])
    with pytest.raises(ValueError, match="steps .* differ in length"):
        tb.FuzzedTensor("x", size=(1, 2), steps=(1,))


def _sparse_fuzzer(lib, coalesced, seed=5):
    return lib.Fuzzer(
        parameters=[
            lib.FuzzedParameter("n", 4, 32, "uniform"),
            lib.FuzzedParameter("m", 4, 32, "uniform"),
            lib.FuzzedParameter("density", distribution={0.1: 0.5, 0.3: 0.5}),
            lib.FuzzedParameter("coalesced", distribution={coalesced: 1.0}),
            lib.FuzzedParameter("sparse_dim", distribution={1: 0.5, 2: 0.5}),
        ],
        tensors=[lib.FuzzedSparseTensor("x", size=("n", "m"), sparse_dim="sparse_dim", density="density",
                                        coalesced="coalesced")],
        seed=seed,
    )


@pytest.mark.parametrize("coalesced", [True, False])
def test_fuzzed_sparse_tensors_are_torchs_draw_for_draw(torch_fuzzers_repaired, coalesced):
    ours = list(_sparse_fuzzer(tb, coalesced).take(6))
    theirs = list(_sparse_fuzzer(torch_benchmark, coalesced).take(6))
    for (t0, p0, params0), (t1, p1, params1) in zip(ours, theirs, strict=True):
        assert params0 == params1
        x, y = t0["x"], t1["x"]
        assert x.layout == y.layout == torch.sparse_coo and x.is_coalesced() == y.is_coalesced() == coalesced
        assert torch.equal(x._indices(), y._indices()) and torch.equal(x._values(), y._values())
        assert p0["x"] == p1["x"]
    assert {p["sparse_dim"] for _, _, p in ours} == {1, 2}


def test_roll_parameter_is_accepted_as_torch_accepts_it(torch_fuzzers_repaired):
    def make(lib):
        return lib.Fuzzer(parameters=[lib.FuzzedParameter("n", 4, 64, "uniform")],
                          tensors=[lib.FuzzedTensor("x", size=("n",), roll_parameter="n")], seed=3)

    assert_same_cases(list(make(tb).take(3)), list(make(torch_benchmark).take(3)), ["x"])
