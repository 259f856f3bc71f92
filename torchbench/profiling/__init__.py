"""profiling: where a benchmark case spends its time, as py-spy flame graphs per commit (record.py), and
collapsed stacks, SVGs and differential flame graphs between commits (flamegraph.py)."""
