"""Shared setups: small inputs, so counts show framework overhead rather than math."""

from ..grouped import GroupedSetup

TRIVIAL_2D = GroupedSetup(py_setup="x = torch.ones((4, 4))")
TRIVIAL_3D = GroupedSetup(py_setup="x = torch.ones((4, 4, 4))")
TRIVIAL_4D = GroupedSetup(py_setup="x = torch.ones((4, 4, 4, 4))")

GENERIC_SETUP = """
torch.manual_seed(138_10_23)
x = torch.rand((4, 4))
y_float = torch.ones((4, 4))
y_vector = torch.ones((4, 1))
y_int = torch.ones((4, 4), dtype=torch.int32)
y_bool = torch.ones((4, 4), dtype=torch.bool)
"""

INDEXING_SETUP = """
torch.manual_seed(6626_10_34)
x = torch.randn(1, 1, 1)
y = torch.randn(1, 1, 1)
a = torch.zeros(100, 100, 1, 1, 1)
b = torch.arange(99, -1, -1).long()
"""

TRAINING = GroupedSetup(
    py_setup="""
    x = torch.ones((1,))
    w0 = torch.ones((1,), requires_grad=True)
    w1 = torch.ones((1,), requires_grad=True)
    w2 = torch.ones((2,), requires_grad=True)
    """
)
