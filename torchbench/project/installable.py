"""Which of a matrix's packages pip can install here, asked before anything is built.

asv installs a matrix's packages in one pip command: one package that cannot be installed (a conda name pip
only knows as a placeholder, an extension whose only release is a source archive that needs torch to build, a
pin older than this Python, a package that needs another torch than the pinned one) fails the whole
environment, and nothing is measured. So each package of the user's matrix is first asked of pip beside the
pinned torch (`pip install --dry-run`: the package index's answer and its dependencies' metadata, nothing
installed), and one that cannot be installed is left out with one line, its reason pip's; the rows that
import it are then skipped here, each saying why (torchbench_core.skips). Then the whole matrix is asked at
once: where the user's pins cannot go with torchbench's own (numpy, scipy, setuptools: a history from 2022 needs the scipy of 2022), the user's
win and torchbench's are left out, pip choosing their releases, with one line. The answers are kept beside
the environments (ENV_DIR/installable.json), so a later run asks again only what changed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from torchbench_core.storage import atomic_write_text

__all__ = ["CACHE_NAME", "Checked", "check", "specs"]

CACHE_NAME = "installable.json"
TIMEOUT = 180  # seconds a question may take (a source archive's build metadata included)
OURS_YIELD = ("numpy", "scipy", "setuptools")  # torchbench's pins that give way to the user's matrix


def specs(name: str, version: object) -> list[str]:
    """The pip requirements asv makes of a matrix entry: "" any release, "1.2" ==1.2, a list one environment each."""
    versions = version if isinstance(version, list) else [version]
    bare = name.split("+", 1)[-1]  # asv's "pip+NAME": installed by pip (in a conda environment)
    return [bare if not v else f"{bare}=={v}" if str(v)[0].isdigit() else f"{bare}{v}" for v in versions]


def _ask_pip(requirements: tuple[str, ...]) -> str | None:
    """None when pip would install REQUIREMENTS together here, else pip's reason in one line."""
    cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
           "--disable-pip-version-check", *requirements]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT,
                              env=dict(os.environ, PIP_NO_INPUT="1"))
    except subprocess.TimeoutExpired:
        return f"pip had no answer within {TIMEOUT} s"
    if proc.returncode == 0:
        return None
    lines = [line.strip(" ×╰─>│") for line in proc.stderr.splitlines()]
    said = [line.removeprefix("ERROR: ") for line in lines if line.startswith("ERROR:")]
    conflict = [line for line in said if line.startswith("Cannot install")]
    if conflict:  # the resolver's "conflicting dependencies": its first line names the packages
        return conflict[0]
    if not said:  # a source archive that does not build: pip's "× Getting requirements ... did not run successfully"
        said = [line for line in lines if "did not run successfully" in line] or [l for l in lines if l][-1:]
    return said[-1] if said else f"pip exited {proc.returncode}"


@dataclass
class Checked:
    """The matrix pip can install: the user's packages kept, torchbench's pins kept, and why each other one
    was left out."""

    theirs: dict[str, object]
    ours: dict[str, object]
    left_out: dict[str, str] = field(default_factory=dict)  # the user's package -> pip's reason
    ours_left_out: dict[str, str] = field(default_factory=dict)  # torchbench's pin -> why


def check(theirs: dict[str, object], ours: dict[str, object], cache_dir: Path) -> Checked:
    """THEIRS (the user's matrix `req`, pip's names) and OURS (torchbench's, torch pinned in it) as pip can
    install them here, together (a list's versions that cannot be installed are left out of the list, the name
    when none can)."""
    cache_file = cache_dir / CACHE_NAME
    try:
        known = json.loads(cache_file.read_text())
    except (OSError, ValueError):
        known = {}
    torch = tuple(specs("torch", ours["torch"])[:1]) if "torch" in ours else ()

    def ask(questions: list[tuple[str, ...]]) -> None:
        asked = [q for q in dict.fromkeys(questions) if " ".join(q) not in known]
        if not asked:
            return
        with ThreadPoolExecutor(max_workers=4) as pool:
            known.update(zip((" ".join(q) for q in asked), pool.map(_ask_pip, asked)))
        cache_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(cache_file, json.dumps(known, indent=1, sort_keys=True) + "\n")

    ask([(*torch, s) for name, v in theirs.items() for s in specs(name, v)])
    out = Checked({}, dict(ours))
    for name, version in theirs.items():
        versions = version if isinstance(version, list) else [version]
        answers = [known[" ".join((*torch, s))] for s in specs(name, version)]
        if any(answers):
            out.left_out[name] = "; ".join(f"{s}: {a}" for s, a in zip(specs(name, version), answers) if a)
        good = [v for v, a in zip(versions, answers) if a is None]
        if good:
            out.theirs[name] = good if isinstance(version, list) else good[0]

    def together(ours_: dict) -> tuple[str, ...]:
        merged = {**ours_, **out.theirs}
        return tuple(sorted(s for name, v in merged.items() for s in specs(name, v)[:1]))

    if out.theirs:
        ask([together(ours)])
        why = known[" ".join(together(ours))]
        if why is not None:
            yielding = [k for k in ours if k in OURS_YIELD and k not in out.theirs]
            # one of torchbench's pins left out at a time, then all of them: the fewest that let it install
            tries = [[k] for k in yielding] + ([yielding] if len(yielding) > 1 else [])
            ask([together({k: v for k, v in ours.items() if k not in drop}) for drop in tries])
            drop = next((d for d in tries if known[" ".join(together({k: v for k, v in ours.items()
                                                                       if k not in d}))] is None), None)
            if drop is not None:
                out.ours = {k: v for k, v in ours.items() if k not in drop}
                out.ours_left_out = {k: f"with it pip cannot install the user's matrix ({why})" for k in drop}
            else:
                out.ours_left_out = {"(none)": f"the user's matrix and torchbench's pins conflict: {why}"}
    return out
