"""torch's ``core`` (benchmarks/instruction_counts/core), each module re-exporting torchbench_core.grouped."""
