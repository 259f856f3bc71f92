"""The standard definitions, ported from PyTorch's instruction-count suite, in Python and C++.

Where torch's suite pairs a Python statement with its C++ twin, so do these (torch's C++-only groups,
Empty/overloads and InferenceMode, have a Python twin here too). A group of one-line variants is a list of
(Python, C++) pairs under their labels, written out as torch's `# @label` / `// @label` blocks
(GroupedVariants), whose lines pair by position.
"""

from ..grouped import GroupedModules, GroupedSetup, GroupedStmts, GroupedVariants
from .setups import GENERIC, INDEXING, TRAINING, TRIVIAL_2D, TRIVIAL_3D, TRIVIAL_4D

Pairs = dict[str, list[tuple[str, str]]]


def _variants(setup: GroupedSetup, sections: Pairs) -> GroupedVariants:
    """One benchmark per (Python, C++) pair, in torch's block format; "" leaves a language out."""
    py = ["# @setup", *setup.py_setup.splitlines()]
    cpp = ["// @setup", *setup.cpp_setup.splitlines()]
    for label, pairs in sections.items():
        py.append(f"# @{label}")
        cpp.append(f"// @{label}")
        for py_line, cpp_line in pairs:
            py.append(py_line or "#")
            cpp.append(cpp_line or "//")
    return GroupedVariants("\n".join(py), "\n".join(cpp))


def _module(py_model: str, cpp_model: str, setup: GroupedSetup, torchscript: bool = True) -> object:
    return GroupedModules(py_model_setup=f"model = torch.nn.{py_model}",
                          cpp_model_setup=f"auto model = torch::nn::{cpp_model};",
                          setup=setup, signature="f(x) -> y", torchscript=torchscript)


BENCHMARKS = {
    "Empty": {
        "no allocation": GroupedStmts(py_stmt="torch.empty(())", cpp_stmt="torch::empty({0});"),
        "with allocation": GroupedStmts(py_stmt="torch.empty((1,))", cpp_stmt="torch::empty({1});"),
        "overloads": _variants(GroupedSetup(), {
            "dtype": [("torch.empty((4,), dtype=torch.float64)", "torch::empty({4}, torch::kFloat64);")],
            "memory_format": [("torch.empty((4, 4), memory_format=torch.contiguous_format)",
                               "torch::empty({4, 4}, torch::TensorOptions(), torch::MemoryFormat::Contiguous);")],
            "like": [("torch.empty_like(torch.empty((1,)))", "torch::empty_like(torch::empty({1}));")],
        }),
    },
    "Pointwise": {
        "Math": _variants(GENERIC, {
            "add": [
                ("x += 1.0", "x += 1.0;"),
                ("x += y_float", "x += y_float;"),
                ("x += y_vector", "x += y_vector;"),
                ("x += y_int", "x += y_int;"),
                ("x + y_float", "x + y_float;"),
                ("torch.add(x, y_float)", "torch::add(x, y_float);"),
                ("torch.add(x, y_float, out=x)", "torch::add_out(x, x, y_float);"),
            ],
            "multiply": [
                ("x *= 1.0", "x *= 1.0;"),
                ("x *= y_float", "x *= y_float;"),
                ("x *= y_vector", "x *= y_vector;"),
                ("x *= y_int", "x *= y_int;"),
                ("x * y_float", "x * y_float;"),
                ("torch.mul(x, y_float)", "torch::mul(x, y_float);"),
                ("torch.mul(x, y_float, out=x)", "torch::mul_out(x, x, y_float);"),
            ],
            "equality": [("x == y_float", "x == y_float;"), ("x == 1.0", "x == 1.0;")],
            "unary": [
                ("x.abs()", "x.abs();"), ("x.neg()", "x.neg();"), ("x.exp()", "x.exp();"),
                ("x.sqrt()", "x.sqrt();"), ("x.sigmoid()", "x.sigmoid();"), ("x.relu()", "x.relu();"),
            ],
            "select": [
                ("torch.where(y_bool, x, y_float)", "torch::where(y_bool, x, y_float);"),
                ("torch.clamp(x, 0.1, 0.9)", "torch::clamp(x, 0.1, 0.9);"),
                ("torch.maximum(x, y_float)", "torch::maximum(x, y_float);"),
            ],
        }),
        "Data movement": _variants(GroupedSetup(
            py_setup="x = torch.ones((4, 4))\ny = torch.ones((4, 4))\nx_t = x.t()",
            cpp_setup="auto x = torch::ones({4, 4});\nauto y = torch::ones({4, 4});\nauto x_t = x.t();",
        ), {
            "contiguous (trivial)": [("x.contiguous()", "x.contiguous();")],
            "contiguous (non-trivial)": [("x_t.contiguous()", "x_t.contiguous();")],
            "clone": [("x.clone()", "x.clone();")],
            "copy_": [("x.copy_(y)", "x.copy_(y);")],
            "zero_": [("x.zero_()", "x.zero_();")],
            "RNG": [("x.uniform_()", "x.uniform_();")],
            "to dtype": [("x.to(torch.float64)", "x.to(torch::kFloat64);")],
            "cat": [("torch.cat([x, y])", "torch::cat({x, y});")],
            "stack": [("torch.stack([x, y])", "torch::stack({x, y});")],
        }),
    },
    "Reduction": _variants(TRIVIAL_2D, {
        "max": [("x.max()", "x.max();")],
        "sum": [("x.sum()", "x.sum();")],
        "variance": [("x.var(0)", "x.var(0);")],
        "mean": [("x.mean()", "x.mean();")],
        "argmax": [("x.argmax()", "x.argmax();")],
        "cumsum": [("x.cumsum(0)", "x.cumsum(0);")],
        "norm": [("x.norm()", "x.norm();")],
    }),
    "Indexing": _variants(INDEXING, {
        "Tensor-Scalar": [
            ("x[0] = 1", "x.index_put_({0}, 1);"),
            ("x[0, 0] = 1", "x.index_put_({0, 0}, 1);"),
            ("x[0, 0, 0] = 1", "x.index_put_({0, 0, 0}, 1);"),
        ],
        "Tensor-Scalar (Advanced)": [
            ("x[...] = 1", 'x.index_put_({"..."}, 1);'),
            ("x[:] = 1", "x.index_put_({Slice(None, None, None)}, 1);"),
            ("x[None] = 1", "x.index_put_({None}, 1);"),
            ("x[False] = 1", "x.index_put_({false}, 1);"),
            ("x[True] = 1", "x.index_put_({true}, 1);"),
        ],
        "Tensor-Tensor": [
            ("x[0] = y[0]", "x.index_put_({0}, y.index({0}));"),
            ("x[0, 0] = y[0, 0]", "x.index_put_({0, 0}, y.index({0, 0}));"),
            ("x[0, 0, 0] = y[0, 0, 0]", "x.index_put_({0, 0, 0}, y.index({0, 0, 0}));"),
        ],
        "Tensor-Tensor (Advanced)": [
            ("x[...] = y", 'x.index_put_({"..."}, y);'),
            ("x[:] = y", "x.index_put_({Slice(None, None, None)}, y);"),
            ("x[None] = y", "x.index_put_({None}, y);"),
            ("x[False] = y", "x.index_put_({false}, y);"),
            ("x[True] = y", "x.index_put_({true}, y);"),
        ],
        "Gather": [("a[b]", "a.index({b});")],
        "index_select": [("a.index_select(0, b)", "a.index_select(0, b);")],
    }),
    "Metadata and views": _variants(TRIVIAL_2D, {
        "size": [("x.size()[0]", "x.sizes()[0];")],
        "stride": [("x.stride(0)", "x.stride(0);")],
        "as_strided": [("torch.as_strided(x, (2, 3), (4, 1), 2)", "torch::as_strided(x, {2, 3}, {4, 1}, 2);")],
        "select": [("x.select(1, 1)", "x.select(1, 1);")],
        "unsqueeze": [("x.unsqueeze(0)", "x.unsqueeze(0);")],
        "view": [("x.view(-1, 1)", "x.view({-1, 1});")],
        "transpose": [("x.t()", "x.t();")],
        "reshape": [("x.reshape((16, 1))", "x.reshape({16, 1});")],
        "expand": [("x.unsqueeze(0).expand(2, 4, 4)", "x.unsqueeze(0).expand({2, 4, 4});")],
        "narrow": [("x.narrow(0, 1, 2)", "x.narrow(0, 1, 2);")],
        "flatten": [("x.flatten()", "x.flatten();")],
        "dim": [("x.dim()", "x.dim();")],
    }),
    "nn Modules": {
        "BatchNorm2d": _module("BatchNorm2d(4)", "BatchNorm2d(4)", TRIVIAL_4D),
        "GroupNorm": _module("GroupNorm(2, 4)", "GroupNorm(2, 4)", TRIVIAL_4D),
        "LayerNorm": _module("LayerNorm(4)", "LayerNorm(torch::nn::LayerNormOptions({4}))", TRIVIAL_4D),
        "Conv1d": _module("Conv1d(4, 4, 1)", "Conv1d(4, 4, 1)", TRIVIAL_3D),
        "Conv2d": _module("Conv2d(4, 4, 1)", "Conv2d(4, 4, 1)", TRIVIAL_4D),
        "MaxPool2d": _module("MaxPool2d((1, 1))", "MaxPool2d(torch::nn::MaxPool2dOptions({1, 1}))", TRIVIAL_4D),
        "ReLU": _module("ReLU()", "ReLU()", TRIVIAL_4D),
        "Sigmoid": _module("Sigmoid()", "Sigmoid()", TRIVIAL_4D),
        "Linear": _module("Linear(4, 4)", "Linear(4, 4)", TRIVIAL_2D),
        # as in torch's suite: LSTM does not script
        "LSTM": _module("LSTM(4, 4)", "LSTM(4, 4)", TRIVIAL_3D, torchscript=False),
    },
    "training": {
        "simple": GroupedStmts(
            py_stmt="y = (x * w0 + w1).relu().sum()",
            cpp_stmt="auto y = (x * w0 + w1).relu().sum();",
            setup=TRAINING, signature="f(x, w0, w1) -> y", torchscript=True, autograd=True, num_threads=(1, 2),
        ),
        "ensemble": GroupedStmts(
            py_stmt="""
                a0 = torch.nn.functional.gelu(x * w0)
                a1 = torch.nn.functional.prelu(x, w1)
                z = torch.nn.functional.normalize(torch.cat([a0, a1]), p=2.0, dim=0)
                y = z.dot(w2)
            """,
            cpp_stmt="""
                auto a0 = torch::nn::functional::gelu(x * w0);
                auto a1 = torch::nn::functional::prelu(x, w1);
                auto z = torch::nn::functional::normalize(
                    torch::cat({a0, a1}), torch::nn::functional::NormalizeFuncOptions().p(2).dim(0));
                auto y = z.dot(w2);
            """,
            setup=TRAINING, signature="f(x, w0, w1, w2) -> y", torchscript=True, autograd=True, num_threads=(1, 2),
        ),
        "compiled": GroupedStmts(
            py_stmt="y = (x * w0 + w1).relu().sum()",
            setup=TRAINING, signature="f(x, w0, w1) -> y", autograd=True, torch_compile=True,
        ),
    },
    "InferenceMode": _variants(GroupedSetup(
        py_setup="x = torch.ones((4, 4))\ny = torch.ones((4, 4), requires_grad=True)",
        cpp_setup="auto x = torch::ones({4, 4});\nauto y = torch::ones({4, 4}, torch::requires_grad());",
    ), {
        "view": [("with torch.inference_mode(): x.view(-1)", "{ c10::InferenceMode guard; x.view(-1); }")],
        "in-place": [("with torch.inference_mode(): x.add_(1)", "{ c10::InferenceMode guard; x.add_(1); }")],
        "mixed": [("with torch.inference_mode(): z = x + 1", "{ c10::InferenceMode guard; auto z = x + 1; }")],
    }),
}
