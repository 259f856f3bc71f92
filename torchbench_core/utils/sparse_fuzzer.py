"""torch.utils.benchmark.utils.sparse_fuzzer's name."""

from ..fuzzer import FuzzedSparseTensor

__all__ = ["FuzzedSparseTensor"]
