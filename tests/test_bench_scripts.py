"""The bench/ scripts must keep running; their figures are not checked here."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_core_speed_script_prints_every_goal():
    proc = subprocess.run([sys.executable, "bench/core_speed.py", "--quick"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    for metric in ("loop overhead", "fixed cost", "default clock", "blocked_autorange(0.2) wall", "median of torch.add"):
        assert metric in proc.stdout


def test_publish_speed_script_prints_every_case_beside_asv_publish():
    proc = subprocess.run([sys.executable, "bench/publish_speed.py", "--commits", "4", "--benchmarks", "8",
                           "--repeats", "1"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    for case in ("asv publish (asv's pages)", "torchbench pages alone, no cache", "ours again, nothing new",
                 "ours, one new commit (every label)", "ours, one new commit of one label"):
        assert f"| {case} |" in proc.stdout, proc.stdout
