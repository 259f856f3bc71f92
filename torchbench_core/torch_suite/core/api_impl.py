"""torch's core.api_impl: GroupedStmts and GroupedModules, which some of its definition files import from here."""

from torchbench_core.grouped import GroupedBenchmark as _GroupedBenchmarkImpl
from torchbench_core.grouped import GroupedModules, GroupedStmts

__all__ = ["GroupedModules", "GroupedStmts", "_GroupedBenchmarkImpl"]
