"""What every suite shares: the measuring harness and the asv return format.

The harness is torchbench_core from the working tree that runs asv, ahead of
whatever copy the commit under test installed, so a history moves when the
measured code changes, never when the harness does. `torchbench.history`
passes the tree through ASV_PYTHONPATH; a plain `asv run` at the repository
root is covered by ASV_CONF_DIR.

Task-spec metadata lives in each benchmark's asv parameters, whose values
asv writes into every result row: the parameter names are drawn from
TASK_SPEC_PARAMS, and the env is the result file's env_name and commit. A
publisher can rebuild Compare tables from the result files alone.
"""

from __future__ import annotations

import os
import sys

_conf_dir = os.environ.get("ASV_CONF_DIR")
if _conf_dir and os.path.isdir(os.path.join(_conf_dir, "torchbench_core")) and _conf_dir not in sys.path:
    sys.path.insert(0, _conf_dir)

import torchbench_core  # noqa: E402

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
