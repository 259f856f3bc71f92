"""operatorbench (seed 003): aten operators on the inputs real models give them, eager against inductor.

Flow: record (a model's training step under a dispatch mode -> a log in
PyTorch's operator-input format) -> load (the log's specs -> tensors on a
device and dtype) -> bench (each operator's single-op graph, compiled by
inductor, checked and timed interleaved with eager) -> a CSV and a Compare
table. ``python -m torchbench_core.operators --help`` runs it; the recorded
logs ship in ``logs/<suite>/``.
"""

from pathlib import Path

from .log_format import LogFormatError, OperatorLog, SparseSpec, TensorSpec, format_sample, parse_sample

LOGS = Path(__file__).parent / "logs"

__all__ = ["LOGS", "LogFormatError", "OperatorLog", "SparseSpec", "TensorSpec", "format_sample", "parse_sample",
           "suite_log", "suites"]


def suites() -> list[str]:
    """The recorded suites shipped with the package (folders of logs)."""
    return sorted(p.name for p in LOGS.iterdir() if p.is_dir() and any(p.glob("*.txt")))


def suite_log(suite: str) -> OperatorLog:
    """Every log of one shipped suite, merged."""
    if suite not in suites():
        raise KeyError(f"no recorded suite {suite!r}: one of {', '.join(suites())}")
    return OperatorLog.read(LOGS / suite)
