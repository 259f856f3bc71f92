"""Shared helpers: the same samples as a torchbench_core and a torch Measurement."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch.utils.benchmark as torch_benchmark
from torch.utils.benchmark.utils.common import TaskSpec as TorchTaskSpec

import torchbench_core as tb


def measurement_pair(raw_times, number_per_run=1, **spec):
    """(ours, torch's) Measurement over identical samples and task spec."""
    spec.setdefault("stmt", "f(x)")
    spec.setdefault("setup", "pass")
    ours = tb.Measurement(number_per_run, list(raw_times), tb.TaskSpec(**spec))
    theirs = torch_benchmark.Measurement(number_per_run, list(raw_times), TorchTaskSpec(**spec))
    return ours, theirs


@pytest.fixture
def pair():
    return measurement_pair


def pytest_configure(config):
    """Once, before any worker starts (pytest-xdist runs this in the controller too): asv's machine file. A
    fresh machine has none, and two workers' `asv machine --yes` at once would write it together."""
    if hasattr(config, "workerinput"):
        return
    from torchbench import resources
    from torchbench.asv_bridge.driver import MACHINE_COMMAND, machine_file

    if not machine_file().exists():
        subprocess.run([*MACHINE_COMMAND, "--config", str(resources.base_config_file())], check=True,
                       capture_output=True)


@pytest.fixture(scope="session")
def env_dir(tmp_path_factory):
    """One asv environment folder for every end-to-end run of the session (built once, ~45 s)."""
    return tmp_path_factory.mktemp("envs")


POOL = Path(__file__).parent / "data" / "alert_pool_12_rounds.json"


@pytest.fixture(scope="session")
def real_values() -> dict[str, np.ndarray]:
    """Real per-process values: each case's values from tests/data/alert_pool_12_rounds.json's two arms of
    identical code (the example's six dispatch cases, 12 rounds of fresh processes here: 24 a case)."""
    pool = json.loads(POOL.read_text())
    values: dict[str, list[float]] = {}
    for r in pool["rounds"]:
        for arm in ("c5", "c6"):
            for key, v in r["arms"][arm]["values"].items():
                values.setdefault(key, []).append(v)
    return {k: np.asarray(v) for k, v in values.items()}
