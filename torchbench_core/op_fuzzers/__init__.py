"""Ready-made fuzzers for common op shapes (torch.utils.benchmark.op_fuzzers).

They construct and run here; in torch 2.13.0 every one of them fails at
construction because of the inverted dict-distribution check.
"""

from .binary import BinaryOpFuzzer
from .spectral import SpectralOpFuzzer
from .unary import UnaryOpFuzzer

__all__ = ["BinaryOpFuzzer", "SpectralOpFuzzer", "UnaryOpFuzzer"]
