"""External programs torchbench runs (py-spy, valgrind, npm), found where a user installed them; npm's packages.

A program installed into the same venv as torchbench (`pip install py-spy`)
sits beside the interpreter, in `sys.executable`'s folder, and a venv that
is used without being activated (`/path/venv/bin/torchbench ...`) has that
folder off PATH; so that folder is searched first, then PATH.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

__all__ = ["find", "npm_package"]


def find(name: str) -> str | None:
    """The path of the program NAME, beside the running interpreter or on PATH; None if neither has it."""
    # sys.executable unresolved: a venv's bin/python is a link to the base interpreter, whose folder is not
    # the venv's
    beside = shutil.which(name, path=os.path.dirname(sys.executable))
    return beside or shutil.which(name)


def npm_package(spec: str, cache: Path) -> Path:
    """The unpacked npm package `spec` (name@version), fetched with `npm pack` unless cached. Unpacked in a
    temporary folder and renamed into the cache, so an interrupted fetch, or two processes fetching at
    once, never leave half a package there."""
    target = cache / spec.replace("/", "_")
    if not (target / "package").is_dir():
        npm = find("npm")
        if npm is None:
            raise RuntimeError(f"npm is not installed: cannot fetch {spec}")
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=cache, prefix=f".{target.name}.") as tmp:
            proc = subprocess.run([npm, "pack", spec, "--silent"], cwd=tmp, capture_output=True, text=True,
                                  timeout=300)
            if proc.returncode != 0:
                raise RuntimeError(f"npm pack {spec} failed: {proc.stderr.strip()[-500:]}")
            tarball = next(Path(tmp).glob("*.tgz"))
            with tarfile.open(tarball) as tar:
                tar.extractall(Path(tmp) / "unpacked", filter="data")
            if target.exists() and not (target / "package").is_dir():  # half unpacked by an older torchbench
                shutil.rmtree(target, ignore_errors=True)
            try:
                (Path(tmp) / "unpacked").rename(target)
            except OSError:  # another process put it there first: theirs is whole too
                pass
    return target / "package"
