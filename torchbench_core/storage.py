"""Measurement files on disk: written atomically, read with errors that name the file.

JSON only. Pickles stay an in-memory convenience (as in the tutorial); nothing
here ever loads one, because unpickling a file runs arbitrary code.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Iterable, Iterator

from .measurement import Measurement, MeasurementFormatError

FILE_SCHEMA = "torchbench_core.MeasurementFile"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _umask()


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary path beside PATH (a hidden ``.NAME.*.tmp``) to write in any way; renamed over PATH when the
    block ends normally, removed when it raises. Never half a file at PATH. The one atomic write of the
    project: the text and binary writes below use it, and so does the asv plugin around asv's own writer."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes it private; the file gets what open() would give it
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: str | os.PathLike, data: bytes, *, fsync: bool = True) -> None:
    """Write DATA atomically; with FSYNC (the default) it is on disk before the rename."""
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        f.write(data)
        if fsync:
            f.flush()
            os.fsync(f.fileno())


def atomic_write_text(path: str | os.PathLike, text: str, *, fsync: bool = True) -> None:
    """Write TEXT (UTF-8) via a temporary file in the same folder and rename: never half a file."""
    atomic_write_bytes(path, text.encode("utf-8"), fsync=fsync)


def save_measurements(path: str | os.PathLike, measurements: Iterable[Measurement]) -> None:
    doc = {"schema": FILE_SCHEMA, "measurements": [m.to_dict() for m in measurements]}
    atomic_write_text(path, json.dumps(doc, indent=1, allow_nan=False))


def load_measurements(path: str | os.PathLike) -> list[Measurement]:
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise MeasurementFormatError(f"{path}: not valid JSON: {e}") from e
    if not isinstance(doc, dict) or doc.get("schema") != FILE_SCHEMA:
        raise MeasurementFormatError(f"{path}: not a torchbench_core measurement file")
    items = doc.get("measurements")
    if not isinstance(items, list):
        raise MeasurementFormatError(f"{path}: 'measurements' must be a list")
    return [Measurement.from_dict(m, source=f"{path} [measurement {i}]") for i, m in enumerate(items)]
