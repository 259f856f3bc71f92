"""asv benchmark suites, measured by torchbench_core (see benchmarks/README.md)."""
