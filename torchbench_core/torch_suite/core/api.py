"""torch's core.api: the grouped definitions' classes and enums, and torch.utils.benchmark's Language."""

from torchbench_core.grouped import (AutogradMode, AutoLabels, GroupedBenchmark, GroupedModules, GroupedSetup,
                                     GroupedStmts, GroupedVariants, RuntimeMode, TimerArgs)
from torchbench_core.task_spec import Language

__all__ = ["AutoLabels", "AutogradMode", "GroupedBenchmark", "GroupedModules", "GroupedSetup", "GroupedStmts",
           "GroupedVariants", "Language", "RuntimeMode", "TimerArgs"]
