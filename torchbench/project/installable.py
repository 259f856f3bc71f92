"""Which of a matrix's packages pip can install here, asked before anything is built.

asv installs a matrix's packages in one pip command: one package that cannot be installed (a conda name pip
only knows as a placeholder, an extension whose only release is a source archive that needs torch to build, a
pin older than this Python) fails the whole environment, and nothing is measured. So each package of the
user's matrix is first asked of pip (`pip install --dry-run --no-deps`: the package index's answer, the
package's own build metadata where it has no wheel; nothing installed), and one that cannot be installed is
left out with one line, its reason pip's. Only the rows that import it then fail, each saying so. The answers
are kept beside the environments (ENV_DIR/installable.json), so a later run asks again only what changed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from torchbench_core.storage import atomic_write_text

__all__ = ["CACHE_NAME", "check", "specs"]

CACHE_NAME = "installable.json"
TIMEOUT = 120  # seconds a package's answer may take (a source archive's build metadata included)


def specs(name: str, version: object) -> list[str]:
    """The pip requirements asv makes of a matrix entry: "" any release, "1.2" ==1.2, a list one environment each."""
    versions = version if isinstance(version, list) else [version]
    bare = name.split("+", 1)[-1]  # asv's "pip+NAME": installed by pip (in a conda environment)
    return [bare if not v else f"{bare}=={v}" if str(v)[0].isdigit() else f"{bare}{v}" for v in versions]


def _ask_pip(spec: str) -> str | None:
    """None when pip would install SPEC here, else pip's reason in one line."""
    cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--ignore-installed", "--quiet",
           "--disable-pip-version-check", spec]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT,
                              env=dict(os.environ, PIP_NO_INPUT="1"))
    except subprocess.TimeoutExpired:
        return f"pip had no answer within {TIMEOUT} s"
    if proc.returncode == 0:
        return None
    lines = [line.strip(" ×╰─>│") for line in proc.stderr.splitlines()]
    said = [line.removeprefix("ERROR: ") for line in lines if line.startswith("ERROR:")]
    if not said:  # a source archive that does not build: pip's "× Getting requirements ... did not run successfully"
        said = [line for line in lines if "did not run successfully" in line] or [l for l in lines if l][-1:]
    return said[-1] if said else f"pip exited {proc.returncode}"


def check(req: dict[str, object], cache_dir: Path) -> tuple[dict[str, object], dict[str, str]]:
    """REQ (a matrix's `req`) without what cannot be installed here, and {name: why} for each left out
    (a list's versions that cannot be installed are left out of the list, the name when none can)."""
    cache_file = cache_dir / CACHE_NAME
    try:
        known = json.loads(cache_file.read_text())
    except (OSError, ValueError):
        known = {}
    asked = sorted({s for name, v in req.items() for s in specs(name, v)} - set(known))
    if asked:
        with ThreadPoolExecutor(max_workers=4) as pool:
            known.update(zip(asked, pool.map(_ask_pip, asked)))
        cache_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(cache_file, json.dumps(known, indent=1, sort_keys=True) + "\n")
    kept: dict[str, object] = {}
    why: dict[str, str] = {}
    for name, version in req.items():
        versions = version if isinstance(version, list) else [version]
        good = [v for v, s in zip(versions, specs(name, version)) if known.get(s) is None]
        bad = [f"{s}: {known[s]}" for s in specs(name, version) if known.get(s) is not None]
        if bad:
            why[name] = "; ".join(bad)
        if good:
            kept[name] = good if isinstance(version, list) else good[0]
    return kept, why
