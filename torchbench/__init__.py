"""torchbench: the tracker around torchbench_core. The `torchbench` command is cli.main."""
