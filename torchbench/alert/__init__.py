"""`torchbench alert`: pull-request regression alerts that can be trusted on a noisy machine.

measure.py (alternating processes) -> decide.py (statistics from torchbench.stats,
instruction-count labels) -> report.py (Markdown, JSON, exit status); command.py wires them.
"""
