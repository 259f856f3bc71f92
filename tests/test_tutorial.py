import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).with_name("tutorial_sections.py")


def test_seed_tutorial_sections_1_to_7_run_on_torchbench_core():
    proc = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "TUTORIAL DONE" in proc.stderr
    out = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout)
    # Section 3: Measurement reprs in torch's format.
    assert "Multithreaded batch dot: Implemented using mul and sum" in out
    assert "1 measurement, 100 runs, 1 thread" in out
    # Section 4: blocked_autorange gives many samples.
    assert re.search(r"\d+ measurements, \d+ runs per measurement, \d+ threads?", out)
    # Section 5: one table, two thread blocks, both descriptions.
    assert out.count("1 threads: ") >= 3 and "2 threads: " in out
    assert re.search(r"\|\s+mul/sum\s+\|\s+bmm", out)
    # Section 6: A/B table with both envs tagged.
    assert "(environment A: mul/sum)  batched_dot(x, x)" in out
    assert "(environment B: bmm)      batched_dot(x, x)" in out
    # Section 7: the fuzzer's first case is the tutorial's (725 x 257), and
    # the binary op fuzzer (broken in torch 2.13) produced its table.
    assert "{'k0': 725, 'k1': 257}" in out
    assert "725    x 257" in out
    assert "64     x 473  (discontiguous)" in out
