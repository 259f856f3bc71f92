"""torch.utils.benchmark.utils.fuzzer's names."""

from ..fuzzer import FuzzedParameter, FuzzedTensor, Fuzzer, ParameterAlias

__all__ = ["Fuzzer", "FuzzedParameter", "ParameterAlias", "FuzzedTensor"]
