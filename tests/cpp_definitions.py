"""Definitions written as torch's instruction-count suite writes them (its definitions/setup.py and
definitions/standard.py, in its format: positional Python-then-C++ arguments, side-by-side tables), with
only the import line changed. tests/test_cpp_suite.py runs them."""

from torchbench_core.grouped import GroupedModules, GroupedSetup, GroupedStmts, GroupedVariants, parse_stmts

# A global_setup that already includes what the C++ TorchScript cases need: their eager twins share it, and
# the whole C++ half of these setups compiles as one program.
_GLOBAL_SETUP = r"""
#include <string>
#include <vector>
#include <torch/script.h>
"""

_TRIVIAL_2D = GroupedSetup(
    r"x = torch.ones((4, 4))",
    r"auto x = torch::ones({4, 4});",
    _GLOBAL_SETUP,
)

_TRAINING = GroupedSetup(*parse_stmts(
    r"""
        Python                                   | C++
        ---------------------------------------- | ----------------------------------------
        # Inputs                                 | // Inputs
        x = torch.ones((1,))                     | auto x = torch::ones({1});
        y = torch.ones((1,))                     | auto y = torch::ones({1});
                                                 |
        # Weights                                | // Weights
        w0 = torch.ones(                         | auto w0 = torch::ones({1});
            (1,), requires_grad=True)            | w0.set_requires_grad(true);
        w1 = torch.ones(                         | auto w1 = torch::ones({1});
            (1,), requires_grad=True)            | w1.set_requires_grad(true);
    """
), _GLOBAL_SETUP)

BENCHMARKS = {
    "empty": {
        "no allocation": GroupedStmts(
            r"torch.empty(())",
            r"torch::empty({0});",
        ),
    },

    ("Pointwise", "Math"): GroupedVariants(*parse_stmts(r"""
        Python                                   | C++
        ---------------------------------------- | ----------------------------------------
        # @setup                                 | // @setup
        x = torch.ones((4, 4))                   | auto x = torch::ones({4, 4});
        y_float = torch.ones((4, 4))             | auto y_float = torch::ones({4, 4});
                                                 |
        # @add                                   | // @add
        x += 1.0                                 | x += 1.0;
        x += y_float                             | x += y_float;
                                                 |
        # @overload                              | // @overload
                                                 | torch::add_out(x, x, y_float);
    """)),

    "nn Modules": {
        "Linear": GroupedModules(
            "model = torch.nn.Linear(4, 2)",
            "auto model = torch::nn::Linear(4, 2);",
            setup=_TRIVIAL_2D,
            signature="f(x) -> y",
            torchscript=True,
        ),
    },

    "training": {
        "simple": GroupedStmts(
            *parse_stmts(r"""
                Python                                   | C++
                ---------------------------------------- | ----------------------------------------
                a0 = torch.nn.functional.relu(x * w0)    | auto a0 = torch::nn::functional::relu(x * w0);
                y = a0 * w1                              | auto y = a0 * w1;
            """),
            _TRAINING,
            num_threads=1,
            signature=r"f(x, w0, w1) -> y",
            torchscript=True,
            autograd=True,
        ),
    },
}
