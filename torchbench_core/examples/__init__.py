"""Runnable examples: `python -m torchbench_core.examples.batched_dot`."""
