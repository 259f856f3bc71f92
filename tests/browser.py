"""Headless Chromium for the page tests: the DOM after scripts ran, and what the console said.

Chromium is a test dependency (scripts/install.sh installs the Debian
package): a page test that skipped without it would let a broken page pass.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--allow-file-access-from-files",
         "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000"]
_CONSOLE = re.compile(r':CONSOLE[^\]]*\] "(.*)", source: (\S*)')


@dataclass
class Loaded:
    dom: str
    console: list[str]  # every console message, with its source

    @property
    def errors(self) -> list[str]:
        return [line for line in self.console if "Uncaught" in line or "Error" in line or "Failed" in line]


def chromium() -> str:
    path = shutil.which("chromium")
    assert path, "chromium is not installed: scripts/install.sh installs the Debian package"
    return path


def load(url: str, profile_dir: Path) -> Loaded:
    """Open `url` (file:// or http://), let its scripts run, and return the DOM and console messages."""
    proc = subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile_dir}", "--dump-dom", url],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    console = [f"{m.group(1)} ({m.group(2)})" for m in _CONSOLE.finditer(proc.stderr)]
    return Loaded(proc.stdout, console)


def screenshot(url: str, dest: Path, profile_dir: Path, size: str = "1200,900") -> Path:
    proc = subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile_dir}", f"--window-size={size}",
                           f"--screenshot={dest}", url], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0 and dest.stat().st_size > 10_000, proc.stderr[-3000:]
    return dest


def evaluate(page: Path, profile_dir: Path, expression: str) -> str:
    """The value of a JavaScript expression (as a string) in PAGE after its scripts ran: a copy of the page,
    beside it (its relative links hold), with one more script at its end that writes the value into the DOM."""
    text = page.read_text()
    probe = ('<script>document.body.setAttribute("data-evaluated", String(' + expression + "));</script>")
    at = text.rfind("</body>")
    copy = page.with_name(f".evaluate-{page.name}")
    copy.write_text(text[:at] + probe + text[at:] if at >= 0 else text + probe)
    try:
        loaded = load(copy.as_uri(), profile_dir)
    finally:
        copy.unlink()
    assert not loaded.errors, loaded.console
    found = re.search(r'data-evaluated="([^"]*)"', loaded.dom)
    assert found, "the expression left no value"
    return found.group(1)
