"""torch's core.expand: materialize, a (flat or nested) definition to (label, AutoLabels, TimerArgs) cases."""

from torchbench_core.grouped import materialize

__all__ = ["materialize"]
