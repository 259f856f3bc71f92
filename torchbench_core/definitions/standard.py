"""The standard definitions, ported in spirit from PyTorch's instruction-count suite.

Python only (torchbench_core has no C++ harness). `# @label` blocks are
GroupedVariants: one benchmark per line. Where torch's suite had C++-only
groups (Empty/overloads, InferenceMode) these are their Python equivalents.
"""

from ..grouped import GroupedModules, GroupedStmts, GroupedVariants
from .setups import GENERIC_SETUP, INDEXING_SETUP, TRAINING, TRIVIAL_2D, TRIVIAL_3D, TRIVIAL_4D


def _variants(setup: str, body: str) -> GroupedVariants:
    lines = ["# @setup", *setup.strip().splitlines(), *body.strip().splitlines()]
    return GroupedVariants.from_block("\n".join(lines))


def _module(model: str, setup, torchscript: bool = True) -> object:
    return GroupedModules(py_model_setup=f"model = {model}", setup=setup, signature="f(x) -> y",
                          torchscript=torchscript)


BENCHMARKS = {
    "Empty": {
        "no allocation": GroupedStmts(py_stmt="torch.empty(())"),
        "with allocation": GroupedStmts(py_stmt="torch.empty((1,))"),
        "overloads": _variants("pass", """
            # @dtype
            torch.empty((4,), dtype=torch.float64)
            # @memory_format
            torch.empty((4, 4), memory_format=torch.contiguous_format)
            # @like
            torch.empty_like(torch.empty((1,)))
        """),
    },
    "Pointwise": {
        "Math": _variants(GENERIC_SETUP, """
            # @add
            x += 1.0
            x += y_float
            x += y_vector
            x += y_int
            x + y_float
            torch.add(x, y_float)
            torch.add(x, y_float, out=x)
            # @multiply
            x *= 1.0
            x *= y_float
            x *= y_vector
            x *= y_int
            x * y_float
            torch.mul(x, y_float)
            torch.mul(x, y_float, out=x)
            # @equality
            x == y_float
            x == 1.0
            # @unary
            x.abs()
            x.neg()
            x.exp()
            x.sqrt()
            x.sigmoid()
            x.relu()
            # @select
            torch.where(y_bool, x, y_float)
            torch.clamp(x, 0.1, 0.9)
            torch.maximum(x, y_float)
        """),
        "Data movement": _variants("x = torch.ones((4, 4))\ny = torch.ones((4, 4))\nx_t = x.t()", """
            # @contiguous (trivial)
            x.contiguous()
            # @contiguous (non-trivial)
            x_t.contiguous()
            # @clone
            x.clone()
            # @copy_
            x.copy_(y)
            # @zero_
            x.zero_()
            # @RNG
            x.uniform_()
            # @to dtype
            x.to(torch.float64)
            # @cat
            torch.cat([x, y])
            # @stack
            torch.stack([x, y])
        """),
    },
    "Reduction": _variants("x = torch.ones((4, 4))", """
        # @max
        x.max()
        # @sum
        x.sum()
        # @variance
        x.var(0)
        # @mean
        x.mean()
        # @argmax
        x.argmax()
        # @cumsum
        x.cumsum(0)
        # @norm
        x.norm()
    """),
    "Indexing": _variants(INDEXING_SETUP, """
        # @Tensor-Scalar
        x[0] = 1
        x[0, 0] = 1
        x[0, 0, 0] = 1
        # @Tensor-Scalar (Advanced)
        x[...] = 1
        x[:] = 1
        x[None] = 1
        x[False] = 1
        x[True] = 1
        # @Tensor-Tensor
        x[0] = y[0]
        x[0, 0] = y[0, 0]
        x[0, 0, 0] = y[0, 0, 0]
        # @Tensor-Tensor (Advanced)
        x[...] = y
        x[:] = y
        x[None] = y
        x[False] = y
        x[True] = y
        # @Gather
        a[b]
        # @index_select
        a.index_select(0, b)
    """),
    "Metadata and views": _variants("x = torch.ones((4, 4))", """
        # @size
        x.size()[0]
        # @stride
        x.stride(0)
        # @as_strided
        torch.as_strided(x, (2, 3), (4, 1), 2)
        # @select
        x.select(1, 1)
        # @unsqueeze
        x.unsqueeze(0)
        # @view
        x.view(-1, 1)
        # @transpose
        x.t()
        # @reshape
        x.reshape((16, 1))
        # @expand
        x.unsqueeze(0).expand(2, 4, 4)
        # @narrow
        x.narrow(0, 1, 2)
        # @flatten
        x.flatten()
        # @dim
        x.dim()
    """),
    "nn Modules": {
        "BatchNorm2d": _module("torch.nn.BatchNorm2d(4)", TRIVIAL_4D),
        "GroupNorm": _module("torch.nn.GroupNorm(2, 4)", TRIVIAL_4D),
        "LayerNorm": _module("torch.nn.LayerNorm(4)", TRIVIAL_4D),
        "Conv1d": _module("torch.nn.Conv1d(4, 4, 1)", TRIVIAL_3D),
        "Conv2d": _module("torch.nn.Conv2d(4, 4, 1)", TRIVIAL_4D),
        "MaxPool2d": _module("torch.nn.MaxPool2d((1, 1))", TRIVIAL_4D),
        "ReLU": _module("torch.nn.ReLU()", TRIVIAL_4D),
        "Sigmoid": _module("torch.nn.Sigmoid()", TRIVIAL_4D),
        "Linear": _module("torch.nn.Linear(4, 4)", TRIVIAL_2D),
        "LSTM": GroupedModules(py_model_setup="model = torch.nn.LSTM(4, 4)", setup=TRIVIAL_3D,
                               signature="f(x) -> y"),
    },
    "training": {
        "simple": GroupedStmts(
            py_stmt="y = (x * w0 + w1).relu().sum()",
            setup=TRAINING, signature="f(x, w0, w1) -> y", torchscript=True, autograd=True, num_threads=(1, 2),
        ),
        "ensemble": GroupedStmts(
            py_stmt="""
                a0 = torch.nn.functional.gelu(x * w0)
                a1 = torch.nn.functional.prelu(x, w1)
                z = torch.nn.functional.normalize(torch.cat([a0, a1]), p=2.0, dim=0)
                y = z.dot(w2)
            """,
            setup=TRAINING, signature="f(x, w0, w1, w2) -> y", torchscript=True, autograd=True, num_threads=(1, 2),
        ),
        "compiled": GroupedStmts(
            py_stmt="y = (x * w0 + w1).relu().sum()",
            setup=TRAINING, signature="f(x, w0, w1) -> y", autograd=True, torch_compile=True,
        ),
    },
    "InferenceMode": _variants("x = torch.ones((4, 4))\ny = torch.ones((4, 4), requires_grad=True)", """
        # @view
        with torch.inference_mode(): x.view(-1)
        # @in-place
        with torch.inference_mode(): x.add_(1)
        # @mixed
        with torch.inference_mode(): z = x + 1
    """),
}
