"""history: a range of commits measured with asv (run.py, report.py), the steps in it (changepoints.py),
their record (steps.py), and `find`'s confirmation and bisection of each step (find.py, through
torchbench.ab)."""
