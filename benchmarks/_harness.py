"""What every suite shares: the measuring harness and the asv return format.

(Which torchbench_core is imported is settled in benchmarks/__init__.py.)

Task-spec metadata lives in each benchmark's asv parameters, whose values
asv writes into every result row: the parameter names are drawn from
TASK_SPEC_PARAMS, and the env is the result file's env_name and commit. A
publisher can rebuild Compare tables from the result files alone.
"""

from __future__ import annotations

import os

import torchbench_core

TASK_SPEC_PARAMS = ("label", "sub_label", "description", "num_threads")


def asv_env() -> str | None:
    """The asv environment and commit this process measures, as a Timer env."""
    name, commit = os.environ.get("ASV_ENV_NAME"), os.environ.get("ASV_COMMIT")
    return f"{name}@{commit[:8]}" if name and commit else name


def timer(stmt: str, setup: str = "pass", globals: dict | None = None, *, label: str, sub_label: str,
          description: str, num_threads: int = 1) -> torchbench_core.Timer:
    return torchbench_core.Timer(stmt, setup=setup, globals=globals, label=label, sub_label=sub_label,
                                 description=description, env=asv_env(), num_threads=num_threads)


def samples(measurement: torchbench_core.Measurement) -> dict:
    """asv's undocumented track_ sample format: per-call values plus `number`.

    asv then keeps median, 99% CI, IQR and (with --record-samples) the raw
    samples, and `asv compare` can apply its Mann-Whitney test.
    """
    return {"samples": measurement.times, "number": measurement.number_per_run}


def measure(t: torchbench_core.Timer, min_run_time: float = 0.2) -> dict:
    return samples(t.blocked_autorange(min_run_time=min_run_time))
