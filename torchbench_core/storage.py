"""Measurement files on disk: written atomically, read with errors that name the file.

JSON only. Pickles stay an in-memory convenience (as in the tutorial); nothing
here ever loads one, because unpickling a file runs arbitrary code.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Iterable

from .measurement import Measurement, MeasurementFormatError

FILE_SCHEMA = "torchbench_core.MeasurementFile"


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write via a temporary file in the same folder and rename: never half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


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
