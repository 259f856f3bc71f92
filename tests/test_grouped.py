import pytest
import torch

import torchbench_core as tb
from torchbench_core.definitions.standard import BENCHMARKS
from torchbench_core.grouped import (AutogradMode, GroupedModules, GroupedSetup, GroupedStmts, GroupedVariants,
                                     RuntimeMode, TimerArgs, case_key, definitions_version, flatten, materialize,
                                     parse_signature)

SETUP = GroupedSetup(py_setup="""
    x = torch.ones((4, 4))
    w = torch.ones((4, 4), requires_grad=True)
""")


def variants(definition):
    return [(a.runtime, a.autograd, t.num_threads) for _, a, t in materialize({"case": definition})]


def test_variant_expansion_follows_the_flags():
    E, J, C = RuntimeMode.EAGER, RuntimeMode.JIT, RuntimeMode.COMPILE
    F, FB = AutogradMode.FORWARD, AutogradMode.FORWARD_BACKWARD
    base = dict(py_stmt="y = (x * w).sum()", setup=SETUP, signature="f(x, w) -> y")
    assert variants(GroupedStmts(**base)) == [(E, F, 1)]
    assert variants(GroupedStmts(**base, autograd=True)) == [(E, F, 1), (E, FB, 1)]
    assert variants(GroupedStmts(**base, torchscript=True)) == [(E, F, 1), (J, F, 1)]
    assert variants(GroupedStmts(**base, torchscript=True, autograd=True, num_threads=(1, 2))) == [
        (E, F, 1), (E, F, 2), (E, FB, 1), (E, FB, 2), (J, F, 1), (J, F, 2), (J, FB, 1), (J, FB, 2)]
    assert variants(GroupedStmts(**base, torch_compile=True)) == [(E, F, 1), (C, F, 1)]
    compiled = [t for _, a, t in materialize({"c": GroupedStmts(**base, torch_compile=True)})]
    assert [t.compiled for t in compiled] == [False, True]


def run_case(args):
    ns = {"torch": torch}
    exec(args.setup, ns)
    exec(args.stmt, ns)
    return ns


def test_derived_variants_compute_the_same_thing():
    definition = GroupedStmts(py_stmt="y = (x * w + 1).sum()", setup=SETUP, signature="f(x, w) -> y",
                              torchscript=True, autograd=True)
    cases = materialize({"c": definition})
    outputs = {(a.runtime, a.autograd): run_case(t) for _, a, t in cases}
    for (runtime, autograd), ns in outputs.items():
        assert ns["y"].item() == 32.0, runtime
        if autograd is AutogradMode.FORWARD_BACKWARD:
            # one backward in the stmt; warm-up calls are forward only
            assert torch.equal(ns["w"].grad, ns["x"])
    jit = next(t for _, a, t in cases if a.runtime is RuntimeMode.JIT and a.autograd is AutogradMode.FORWARD)
    assert "torch.jit.CompilationUnit" in jit.setup and jit.stmt == "y = jit_model(x, w)"


def test_modules_get_eager_and_torchscript_calls():
    cases = materialize({"m": GroupedModules(py_model_setup="model = torch.nn.Linear(4, 2)", setup=SETUP,
                                             signature="f(x) -> y", torchscript=True)})
    (_, eager_auto, eager), (_, jit_auto, jit) = cases
    assert eager.stmt == "y = model(x)" and "torch.nn.Linear" in eager.setup
    assert jit.stmt == "y = jit_model(x)" and "torch.jit.script(model)" in jit.setup
    assert run_case(eager)["y"].shape == run_case(jit)["y"].shape == (4, 2)


def test_grouped_variants_one_benchmark_per_line():
    gv = GroupedVariants.from_block("""
        # @setup
        x = torch.ones(4)
        # @add
        x + 1
        torch.add(x, 1)
        # just a comment
        # @neg
        -x
    """)
    cases = materialize({"P": gv})
    assert [label for label, _, _ in cases] == [("P", "add", "Case: 0"), ("P", "add", "Case: 1"), ("P", "neg")]
    assert all(t.setup == "x = torch.ones(4)" for _, _, t in cases)
    assert all(a.runtime is RuntimeMode.EXPLICIT for _, a, _ in cases)


@pytest.mark.parametrize("block, message", [
    ("x + 1", "outside any '# @label' section"),
    ("# @a\n# @b\nx", "section '@a' has no statements"),
    ("# @a\nx\n# @a\ny", "section '@a' appears twice"),
])
def test_grouped_variants_errors(block, message):
    with pytest.raises(ValueError, match=message):
        GroupedVariants.from_block(block)


def test_cpp_is_rejected_with_a_clear_error():
    with pytest.raises(ValueError, match=r"C\+\+ benchmark sources are not supported \(cpp_stmt\)"):
        GroupedStmts(py_stmt="y = x", cpp_stmt="auto y = x;")
    with pytest.raises(ValueError, match=r"\(cpp_setup\)"):
        GroupedSetup(cpp_setup="auto x = torch::ones({4});")
    with pytest.raises(ValueError, match=r"\(cpp_model_setup\)"):
        GroupedModules(py_model_setup="model = torch.nn.ReLU()", cpp_model_setup="auto model = ...;")
    with pytest.raises(ValueError, match=r"\(cpp_block\)"):
        GroupedVariants.from_block("# @a\nx", cpp_block="// @a\nx;")
    with pytest.raises(ValueError, match="only language='python'"):
        TimerArgs("x", language="cpp")


def test_definition_errors():
    with pytest.raises(ValueError, match="autograd=True needs a signature with an output"):
        GroupedStmts(py_stmt="f(x)", signature="f(x) -> None", autograd=True)
    with pytest.raises(ValueError, match="need a signature"):
        GroupedStmts(py_stmt="y = x", torchscript=True)
    with pytest.raises(ValueError, match="must define `model`"):
        GroupedModules(py_model_setup="net = torch.nn.ReLU()")
    with pytest.raises(ValueError, match="several outputs"):
        parse_signature("f(x) -> y, z")
    with pytest.raises(ValueError, match="expected 'f"):
        parse_signature("g(x) -> y")
    assert parse_signature("f(x, w) -> y") == (("x", "w"), "y")
    assert parse_signature("f() -> None") == ((), None)
    with pytest.raises(ValueError, match="Duplicate benchmark label"):
        flatten({"a": {"b": TimerArgs("x")}, ("a", "b"): TimerArgs("y")})


def test_timer_args_round_trip():
    args = TimerArgs("y = x", "x = 1", num_threads=2, compiled=True)
    assert TimerArgs.from_dict(args.to_dict()) == args


def test_standard_definitions_cover_the_suite():
    cases = materialize(BENCHMARKS)
    assert len(cases) >= 100
    keys = [case_key(*c) for c in cases]
    assert len(set(keys)) == len(keys)
    groups = {label[0] for label, _, _ in cases}
    assert {"Empty", "Pointwise", "Reduction", "Indexing", "Metadata and views", "nn Modules", "training"} <= groups
    runtimes = {a.runtime for _, a, _ in cases}
    assert {RuntimeMode.EAGER, RuntimeMode.JIT, RuntimeMode.COMPILE, RuntimeMode.EXPLICIT} <= runtimes
    assert definitions_version(keys) == definitions_version(reversed(keys))
    assert definitions_version(keys) != definitions_version(keys[1:])


def test_every_standard_case_runs():
    """Each (non-compiled) case builds a Timer and runs; compiled ones cost ~15 s each and are exercised elsewhere."""
    for label, auto, args in materialize(BENCHMARKS):
        if args.compiled:
            continue
        tb.Timer(args.stmt, setup=args.setup, num_threads=args.num_threads).timeit(2)
