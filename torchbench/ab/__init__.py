"""A/B: two commits measured against each other in alternating processes, and the verdict per case.

options (Rounds, Policy) -> pair (build both, list, count) -> rounds (alternating processes, interim
looks) -> evidence -> verdict (statistics, FDR, instruction-count labels). `torchbench alert` and `torchbench
find` both use it; it knows nothing of either.
"""
