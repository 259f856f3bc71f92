import pytest
import torch

import torchbench_core as tb
from torchbench_core.definitions.standard import BENCHMARKS
from torchbench_core.grouped import (AutogradMode, GroupedModules, GroupedSetup, GroupedStmts, GroupedVariants,
                                     RuntimeMode, TimerArgs, case_key, definitions_version, flatten, materialize,
                                     parse_signature, parse_stmts)

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


CPP_SETUP = GroupedSetup(
    py_setup="x = torch.ones((4, 4))\nw = torch.ones((4, 4), requires_grad=True)",
    cpp_setup="auto x = torch::ones({4, 4});\nauto w = torch::ones({4, 4}, torch::requires_grad());",
)


def test_python_and_cpp_statements_expand_side_by_side_as_in_torchs_suite(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHBENCH_CPP_CACHE", str(tmp_path))
    cases = materialize({"c": GroupedStmts(py_stmt="y = (x * w).sum()", cpp_stmt="auto y = (x * w).sum();",
                                           setup=CPP_SETUP, signature="f(x, w) -> y", torchscript=True,
                                           autograd=True)})
    by = {(a.runtime, a.autograd, a.language): t for _, a, t in cases}
    E, J, F, FB = RuntimeMode.EAGER, RuntimeMode.JIT, AutogradMode.FORWARD, AutogradMode.FORWARD_BACKWARD
    assert sorted(by, key=str) == sorted([(r, g, lang) for r in (E, J) for g in (F, FB) for lang in ("Python", "C++")],
                                         key=str)
    assert by[(E, F, "C++")] == TimerArgs("auto y = (x * w).sum();", CPP_SETUP.cpp_setup, language="cpp")
    assert by[(E, FB, "C++")].stmt == "auto y = (x * w).sum();\ny.backward();"
    jit = by[(J, FB, "C++")]
    # the Python model, scripted and saved once for C++ to load, as torch's suite does
    assert jit.stmt.endswith("auto y = jit_model.forward(ivalue_inputs);\ny.toTensor().backward();")
    assert "std::vector<torch::jit::IValue> ivalue_inputs({torch::jit::IValue(x), torch::jit::IValue(w)});" in jit.stmt
    assert "#include <torch/script.h>" in jit.global_setup and "torch::jit::load(fpath)" in jit.setup
    (saved,) = (tmp_path / "models").iterdir()
    assert f'"{saved}"' in jit.setup and by[(J, F, "C++")].setup.count(str(saved)) == 1
    loaded = torch.jit.load(str(saved))
    assert loaded(torch.ones(2, 2), torch.ones(2, 2)).item() == 4.0
    assert {case_key(*c) for c in cases}.__len__() == len(cases)  # language is part of the key


def test_modules_call_forward_in_cpp():
    cases = materialize({"m": GroupedModules(py_model_setup="model = torch.nn.Linear(4, 2)",
                                             cpp_model_setup="auto model = torch::nn::Linear(4, 2);",
                                             setup=CPP_SETUP, signature="f(x) -> y")})
    (_, py_auto, py), (_, cpp_auto, cpp) = cases
    assert (py_auto.language, cpp_auto.language) == ("Python", "C++")
    assert cpp.stmt == "auto y = model->forward(x);" and cpp.setup.endswith("auto model = torch::nn::Linear(4, 2);")
    only_cpp = materialize({"m": GroupedModules(cpp_model_setup="auto model = torch::nn::ReLU();")})
    assert [a.language for _, a, _ in only_cpp] == ["C++"]


def test_variants_pair_python_and_cpp_lines_by_position_from_torchs_side_by_side_table():
    py_block, cpp_block = parse_stmts(r"""
        Python                                   | C++
        ---------------------------------------- | ----------------------------------------
        # @setup                                 | // @setup
        x = torch.ones(4)                        | auto x = torch::ones({4});
        # @add                                   | // @add
        x + 1                                    | x + 1;
        # a Python-only line                     | torch::add(x, 1);
        torch.add(x, 1, out=x)                   |
        # @global_setup                          | // @global_setup
                                                 | #include <vector>
    """)
    gv = GroupedVariants(py_block, cpp_block)
    cases = [(label, a.language, t.stmt, t.global_setup) for label, a, t in materialize({"P": gv})]
    assert cases == [
        (("P", "add", "Case: 0"), "Python", "x + 1", ""),
        (("P", "add", "Case: 0"), "C++", "x + 1;", "#include <vector>"),
        (("P", "add", "Case: 1"), "C++", "torch::add(x, 1);", "#include <vector>"),
        (("P", "add", "Case: 2"), "Python", "torch.add(x, 1, out=x)", ""),
    ]
    with pytest.raises(ValueError, match="not 'Python' padded to 40 columns"):
        parse_stmts("Python | C++\n---- | ----\nx | y")
    with pytest.raises(ValueError, match="line 3 .* has no ' [|] ' after a 40-character Python column"):
        parse_stmts("Python" + " " * 35 + "| C++\n" + "-" * 40 + " | " + "-" * 40 + "\nx | y;")


def test_timer_args_take_torchs_language_values():
    assert TimerArgs("x;", language=tb.Language.CPP).language == "cpp"
    assert TimerArgs("x;", language="c++").language == "cpp" and TimerArgs("x").language == "python"
    with pytest.raises(ValueError, match="global_setup is C\\+\\+ only"):
        TimerArgs("x", global_setup="#include <vector>")
    with pytest.raises(ValueError, match="Python only"):
        TimerArgs("x;", language="cpp", compiled=True)
    with pytest.raises(ValueError, match="needs py_stmt, cpp_stmt or both"):
        GroupedStmts()


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


def test_every_standard_python_case_runs():
    """Each (non-compiled) Python case builds a Timer and runs; compiled ones cost ~15 s each and are exercised
    elsewhere, and the C++ half compiles (~50 s) in tests/test_cpp_suite.py."""
    for label, auto, args in materialize(BENCHMARKS):
        if args.compiled or args.language == "cpp":
            continue
        tb.Timer(args.stmt, setup=args.setup, num_threads=args.num_threads).timeit(2)


def test_the_standard_suite_pairs_python_with_cpp_where_torchs_does():
    cases = materialize(BENCHMARKS)
    languages: dict[tuple, set] = {}
    for label, auto, args in cases:
        languages.setdefault((label, auto.runtime, auto.autograd, args.num_threads), set()).add(auto.language)
    python_only = {key[0][:2] for key, langs in languages.items() if langs == {"Python"}}
    # torch.compile has no C++ twin; every other case has both
    assert python_only == {("training", "compiled")}, python_only
    assert sum(a.language == "C++" for _, a, _ in cases) == 114
