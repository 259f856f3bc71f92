"""asv_bridge: everything that talks to asv: starting it (driver.py), plugging into it (plugin.py: atomic
result files, build and failure records), reading its result files (results.py), asking its compare
(asv_compare.py), commits installed side by side in its environments (workspace.py), and the benchmark
processes of torchbench_core.asv_worker (worker.py)."""
