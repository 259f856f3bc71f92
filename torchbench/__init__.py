"""torchbench: the tracker around torchbench_core (asv history runs; publisher and alerts later)."""
