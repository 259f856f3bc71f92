"""Shared helpers: the same samples as a torchbench_core and a torch Measurement."""

from __future__ import annotations

import subprocess

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
