"""An interrupt ends the children, frees the lock and prints one line (issue 62 item 6). Real processes: the
driver's own relay of an asv step whose child started a grandchild (as asv starts pip), and the `torchbench`
command interrupted while it starts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from e2e import ROOT

SCRIPT = '''
import pathlib
from torchbench.asv_bridge.driver import Asv, Timings

asv = Asv(pathlib.Path("unused.json"), Timings())
try:
    asv._run("environment build", ["bash", "-c", "sleep 300 & echo grandchild $!; wait"])
except KeyboardInterrupt:
    print("interrupted", flush=True)
'''


def _sigint_default() -> None:
    """In the child: SIGINT as a terminal delivers it (a CI job may start the tests with SIGINT ignored, which
    every child would inherit, and Python then installs no KeyboardInterrupt for it)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in state  # a zombie has ended: only its parent's wait is missing


def test_an_interrupt_during_an_asv_step_ends_the_steps_whole_process_group(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT], cwd=tmp_path, env=_env(), stdout=subprocess.PIPE,
                            text=True, preexec_fn=_sigint_default)
    try:
        lines = []
        while not any(line.startswith("grandchild ") for line in lines):
            lines.append(proc.stdout.readline())
            assert lines[-1], lines  # the step printed its grandchild's pid through the relay
        grandchild = int(next(line for line in lines if line.startswith("grandchild ")).split()[1])
        assert _alive(grandchild)
        os.kill(proc.pid, signal.SIGINT)  # the command alone, as a CI runner's cancel or `kill -INT` sends it
        rest, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert "interrupted" in rest
    deadline = time.monotonic() + 20
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(grandchild), f"the step's grandchild {grandchild} outlived the interrupt"


def _left_behind(marker: str) -> list[str]:
    """The command lines of live processes that name MARKER (a test's own folder)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in text and _alive(int(cmdline.parent.name)):
            found.append(text)
    return found


def test_an_interrupt_while_the_command_starts_or_builds_prints_one_line_and_leaves_no_process(tmp_path):
    """Ctrl-C during the command line's imports (about a second), then during the example's set-up and its
    environment build (asv setup, pip installing torch): exit status 2, no traceback, no process of the run left
    (the interrupted build's pip ended with it, so the folder's lock goes with the command)."""
    for delay in (0.5, 8.0):  # after the interpreter's own start-up (its site and runpy imports)
        out_dir = tmp_path / f"o{delay}"
        proc = subprocess.Popen([sys.executable, "-m", "torchbench", "run", "--example", "--last", "1", "--out",
                                 out_dir], cwd=tmp_path, env=_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, preexec_fn=_sigint_default)
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 2 and "Traceback" not in err, (delay, out[-2000:], err[-2000:])
        assert "torchbench: interrupted" in err or "interrupted:" in out, (delay, out[-2000:], err[-2000:])
        time.sleep(1)
        assert not _left_behind(str(out_dir)), _left_behind(str(out_dir))
