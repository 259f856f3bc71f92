"""An asv suite of one module in a temporary folder, and a side (this interpreter) to measure it with."""

import sys
from pathlib import Path

from torchbench.ab.evidence import Side


def suite_of(tmp_path: Path, module: str, text: str) -> Path:
    """TMP_PATH/benchmarks, a suite holding one module, `module`.py, of `text`."""
    suite = tmp_path / "benchmarks"
    suite.mkdir()
    (suite / "__init__.py").write_text("")
    (suite / f"{module}.py").write_text(text)
    return suite


def side_of(tmp_path: Path, name: str) -> Side:
    """A side of this interpreter, its installation an empty folder (the project is installed already)."""
    install = tmp_path / f"install-{name}"
    install.mkdir()
    return Side(name, name[0] * 40, install, Path(sys.executable))
