"""scripts/install_torch.sh against local package indexes: what it asks pip for, and what it refuses.

Two indexes stand in for a real machine's: the default one holds a torch 2.13.0 whose metadata requires
NVIDIA's libraries (the shape of torch's Linux build on the public index), the other a torch 2.13.0+cpu
(the shape of PyTorch's CPU wheel index). Both are tiny wheels made here. pip runs with no configuration
of this machine's (no local wheel folder, no index of its own), in a fresh venv each time.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from e2e import ROOT, explain

SCRIPT = ROOT / "scripts" / "install_torch.sh"


def _wheel(folder: Path, version: str, requires: list[str]) -> None:
    """A pure-Python wheel named torch: torch.__version__ is `version`."""
    files = {"torch/__init__.py": f"__version__ = {version!r}\n",
             f"torch-{version}.dist-info/METADATA": "Metadata-Version: 2.1\nName: torch\n"
             f"Version: {version}\n" + "".join(f"Requires-Dist: {r}\n" for r in requires),
             f"torch-{version}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n"
             "Tag: py3-none-any\n"}
    record = f"torch-{version}.dist-info/RECORD"
    lines = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        lines.append(f"{name},sha256={digest},{len(text.encode())}")
    files[record] = "\n".join([*lines, f"{record},,"]) + "\n"
    project = folder / "torch"
    project.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(project / f"torch-{version}-py3-none-any.whl", "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    _index_page(project)


def _index_page(project: Path) -> None:
    """The project's page of a PEP 503 index (pip reads index.html of a file: URL's folder)."""
    links = "".join(f'<a href="{w.name}">{w.name}</a>\n' for w in sorted(project.glob("*.whl")))
    (project / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{links}</body></html>\n")


@pytest.fixture(scope="module")
def indexes(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("indexes")
    # the CUDA build's requirement is behind an extra nobody asks for: the dry run reads it, never resolves it
    _wheel(root / "default", "2.13.0", ['nvidia-cuda-runtime-cu12==12.8.90; extra == "never"'])
    _wheel(root / "cpu", "2.13.0+cpu", [])
    return {"default": root / "default", "cpu": root / "cpu"}


def _install(tmp_path: Path, indexes: dict[str, Path], **env: str) -> tuple[subprocess.CompletedProcess, Path]:
    venv = tmp_path / "venv"
    if not venv.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "TORCH_", "TORCHBENCH_"))}
    clean.update(PIP_CONFIG_FILE=os.devnull, PIP_INDEX_URL=indexes["default"].as_uri(),
                 PYTHON=str(venv / "bin" / "python"), **env)
    proc = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, env=clean, timeout=600)
    return proc, venv


def _installed(venv: Path) -> str | None:
    proc = subprocess.run([str(venv / "bin" / "python"), "-c", "import torch; print(torch.__version__)"],
                          capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has an NVIDIA GPU")
def test_a_cuda_build_on_a_machine_without_a_gpu_is_refused_before_it_is_installed(tmp_path, indexes):
    proc, venv = _install(tmp_path, indexes)
    assert proc.returncode == 2, explain(proc)
    assert "pip would install torch 2.13.0 (cuda build)" in proc.stdout
    assert "TORCH_INDEX_URL=" in proc.stderr and "TORCHBENCH_ALLOW_CUDA_TORCH=1" in proc.stderr
    assert _installed(venv) is None


def test_torch_index_url_takes_the_cpu_build_and_a_second_run_installs_nothing(tmp_path, indexes):
    proc, venv = _install(tmp_path, indexes, TORCH_INDEX_URL=indexes["cpu"].as_uri())
    assert proc.returncode == 0, explain(proc)
    assert f"also looking in TORCH_INDEX_URL={indexes['cpu'].as_uri()}" in proc.stdout
    assert "pip would install torch 2.13.0+cpu (cpu build)" in proc.stdout
    assert _installed(venv) == "2.13.0+cpu"
    again, _ = _install(tmp_path, indexes, TORCH_INDEX_URL=indexes["cpu"].as_uri())
    assert again.returncode == 0 and "already installed as pinned" in again.stdout, explain(again)


def test_the_cuda_build_is_taken_when_asked_for(tmp_path, indexes):
    proc, venv = _install(tmp_path, indexes, TORCHBENCH_ALLOW_CUDA_TORCH="1")
    assert proc.returncode == 0, explain(proc)
    assert _installed(venv) == "2.13.0"


def test_the_pin_is_constraints_txt_alone(tmp_path, indexes):
    """A release the constraints do not allow is never taken, whatever the index holds."""
    _wheel(indexes["cpu"], "2.99.0+cpu", [])
    try:
        proc, venv = _install(tmp_path, indexes, TORCH_INDEX_URL=indexes["cpu"].as_uri())
    finally:
        (indexes["cpu"] / "torch" / "torch-2.99.0+cpu-py3-none-any.whl").unlink()
        _index_page(indexes["cpu"] / "torch")
    assert proc.returncode == 0, explain(proc)
    assert _installed(venv) == "2.13.0+cpu"
    assert "torch==2.13.0" in (ROOT / "constraints.txt").read_text().split()
