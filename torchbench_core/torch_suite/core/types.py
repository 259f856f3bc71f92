"""torch's core.types: the shapes of nested, flat and expanded definitions."""

from torchbench_core.grouped import Definitions as Definition
from torchbench_core.grouped import FlatDefinition, FlatIntermediateDefinition

Label = tuple[str, ...]

__all__ = ["Definition", "FlatDefinition", "FlatIntermediateDefinition", "Label"]
