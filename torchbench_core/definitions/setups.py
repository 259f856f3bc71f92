"""Shared setups, in Python and C++: small inputs, so counts show framework overhead rather than math."""

from ..grouped import GroupedSetup

TRIVIAL_2D = GroupedSetup(py_setup="x = torch.ones((4, 4))", cpp_setup="auto x = torch::ones({4, 4});")
TRIVIAL_3D = GroupedSetup(py_setup="x = torch.ones((4, 4, 4))", cpp_setup="auto x = torch::ones({4, 4, 4});")
TRIVIAL_4D = GroupedSetup(py_setup="x = torch.ones((4, 4, 4, 4))",
                          cpp_setup="auto x = torch::ones({4, 4, 4, 4});")

GENERIC = GroupedSetup(
    py_setup="""
    torch.manual_seed(138_10_23)
    x = torch.rand((4, 4))
    y_float = torch.ones((4, 4))
    y_vector = torch.ones((4, 1))
    y_int = torch.ones((4, 4), dtype=torch.int32)
    y_bool = torch.ones((4, 4), dtype=torch.bool)
    """,
    cpp_setup="""
    torch::manual_seed(1381023);
    auto x = torch::rand({4, 4});
    auto y_float = torch::ones({4, 4});
    auto y_vector = torch::ones({4, 1});
    auto y_int = torch::ones({4, 4}, at::kInt);
    auto y_bool = torch::ones({4, 4}, at::kBool);
    """,
)

INDEXING = GroupedSetup(
    py_setup="""
    torch.manual_seed(6626_10_34)
    x = torch.randn(1, 1, 1)
    y = torch.randn(1, 1, 1)
    a = torch.zeros(100, 100, 1, 1, 1)
    b = torch.arange(99, -1, -1).long()
    """,
    cpp_setup="""
    using namespace torch::indexing;
    torch::manual_seed(66261034);
    auto x = torch::randn({1, 1, 1});
    auto y = torch::randn({1, 1, 1});
    auto a = torch::zeros({100, 100, 1, 1, 1});
    auto b = torch::arange(99, -1, -1, torch::kLong);
    """,
)

TRAINING = GroupedSetup(
    py_setup="""
    x = torch.ones((1,))
    w0 = torch.ones((1,), requires_grad=True)
    w1 = torch.ones((1,), requires_grad=True)
    w2 = torch.ones((2,), requires_grad=True)
    """,
    cpp_setup="""
    auto x = torch::ones({1});
    auto w0 = torch::ones({1}, torch::requires_grad());
    auto w1 = torch::ones({1}, torch::requires_grad());
    auto w2 = torch::ones({2}, torch::requires_grad());
    """,
)
