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
