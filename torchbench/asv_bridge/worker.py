"""Benchmark processes of torchbench_core.asv_worker: asv's own discovery, many benchmarks a process.

The alert and find measure through `run` and `counts`, profile through
`profile`; all of them list the suite first, with `list_benchmarks`. What a
worker writes is read back line by line, and a line that is not JSON (a
suite that printed into it, a process killed mid-line) is named with where
it was found instead of failing the whole command.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator

from ..errors import UserError, last_line

__all__ = ["MEASURED_TYPES", "WORKER", "combinations", "list_benchmarks", "read_json", "read_json_lines"]

WORKER = ["-m", "torchbench_core.asv_worker"]
MEASURED_TYPES = {"track", "time"}
LIST_TIMEOUT = 600.0  # importing a suite (and torch)


def read_json(text: str, where: str):
    """Parse a worker's JSON document; a malformed one is named with its first bad line."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        bad = text.splitlines()[e.lineno - 1] if text.strip() else "(empty)"
        raise UserError(f"{where}: not valid JSON ({e.msg}) at line {e.lineno}: {bad[:200]!r}") from None


def read_json_lines(text: str, where: str) -> tuple[list[dict], str | None]:
    """The whole JSON lines of a worker's output, and what was wrong with the first bad one (None if none).
    A last line without its newline is a write the process did not finish: it is dropped, not an error."""
    records, bad = [], None
    lines = text.split("\n")
    for number, line in enumerate(lines[:-1], 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            bad = bad or f"{where}: line {number} is not valid JSON: {line[:200]!r}"
    return records, bad


def list_benchmarks(python: Path, suite: Path, env: dict[str, str], what: str = "") -> list[dict]:
    """The suite's benchmarks (name, type, unit, params, param_names, setup_cache, timer_suite) as the
    code importable by `python` with `env` sees them. `what` says whose code, for the error message."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "listing.json"
        proc = subprocess.run([str(python), *WORKER, "list", str(suite), "--out", str(out)], capture_output=True,
                              text=True, env=env, timeout=LIST_TIMEOUT)
        if proc.returncode != 0 or not out.exists():
            raise UserError(f"discovering the benchmarks in {suite}{what} failed: {last_line(proc.stderr)}")
        listing = read_json(out.read_text(), f"the benchmark listing of {suite}{what}")
    if not isinstance(listing, list) or not all(isinstance(b, dict) and "name" in b for b in listing):
        raise UserError(f"the benchmark listing of {suite}{what} is not a list of benchmarks")
    return listing


def combinations(benchmark: dict) -> Iterator[tuple[int, tuple[str, ...]]]:
    """(asv's parameter index, the combination's values as repr strings), in asv's order."""
    params = benchmark.get("params") or []
    yield from enumerate(itertools.product(*params) if params else [()])
