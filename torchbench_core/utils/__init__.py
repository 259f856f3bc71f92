"""torch.utils.benchmark.utils, by module name: each module re-exports the names torch's own ``__all__`` lists
(``benchmark.utils.common.Measurement``, ``benchmark.utils.timer.Language``...). torch's ``compile`` and
``cpp_jit`` modules have no counterpart here (docs/differences.md says why)."""

from . import common, compare, fuzzer, sparse_fuzzer, timer, valgrind_wrapper

__all__ = ["common", "compare", "fuzzer", "sparse_fuzzer", "timer", "valgrind_wrapper"]
