"""Rows this machine cannot run: skipped, with the reason, never failed.

Two kinds, each said the same way wherever a row is measured (the alert's
workers, the counting and tracing workers, `torchbench run`'s asv runs):

* asv's skip: the row's setup raises ``NotImplementedError`` (asv_runner
  records NaN, "skipped"); SKIPPED_BY_SETUP. Or its method raises asv_runner's
  ``SkipNotImplemented``; SKIPPED_BY_METHOD. A plain ``NotImplementedError``
  raised by the method fails, as asv_runner 0.3's run counts it.
* hardware the machine lacks: the row asks for a CUDA device where torch has
  none ("Torch not compiled with CUDA enabled", "Found no NVIDIA driver on
  your system", "No CUDA GPUs are available", ...); skipped_here() reads it
  from the error's text, and the row is listed as "skipped here: no CUDA
  device".

A row that fails for any other reason is a failure. Only the text of the
error is read, so this module imports nothing heavy (asv's host interpreter
loads it through the plugin).
"""

from __future__ import annotations

import json
import os
import re

__all__ = ["LEFT_OUT_ENV", "NO_CUDA", "SKIPPED_BY_METHOD", "SKIPPED_BY_SETUP", "SKIPPED_HERE", "lacks_hardware", "missing_hardware", "skipped_here"]

NO_CUDA = "no CUDA device"
SKIPPED_HERE = "skipped here: "  # how a row skipped for hardware this machine lacks is listed, before what
SKIPPED_BY_SETUP = "skipped by its setup (NotImplementedError, asv's skip)"
# asv_runner's SkipNotImplemented raised by the method itself (a plain NotImplementedError there fails, as in asv)
SKIPPED_BY_METHOD = "skipped by the method (SkipNotImplemented, asv's skip)"
# torch's own messages where a CUDA device is asked for and there is none: a CPU build (AssertionError), a
# CUDA build without a driver or without a device (RuntimeError), CUDA-only classes of a CPU build
_NO_CUDA = re.compile("|".join([
    r"Torch not compiled with CUDA enabled",
    r"Found no NVIDIA driver on your system",
    r"No CUDA GPUs are available",
    r"no CUDA-capable device is detected",
    r"torch\.cuda\.\w+ requires CUDA support",
    r"Tried to instantiate dummy base class (?:CUDA)?(?:Event|Stream)",
]))


# {module: package} of the user's matrix packages that could not be installed here and were left out
# (torchbench/project/installable.py), as JSON: set by the command for every process it starts
LEFT_OUT_ENV = "TORCHBENCH_LEFT_OUT"
_NO_MODULE = re.compile(r"No module named '([\w.]+)'")


def missing_hardware(error: str) -> str:
    """The hardware an error says this machine lacks (NO_CUDA), or "" where it says no such thing."""
    return NO_CUDA if _NO_CUDA.search(error or "") else ""


def missing_package(error: str) -> str:
    """Where an error is the import of a matrix package that could not be installed here (LEFT_OUT_ENV), what
    it lacks; else ""."""
    found = _NO_MODULE.search(error or "")
    if not found or not os.environ.get(LEFT_OUT_ENV):
        return ""
    try:
        left_out = json.loads(os.environ[LEFT_OUT_ENV])
    except ValueError:
        return ""
    package = left_out.get(found.group(1).split(".")[0])
    return f"its matrix package {package} cannot be installed here" if package else ""


def skipped_here(error: str) -> str:
    """How a row that failed with `error` is listed when the error is hardware this machine lacks
    ("skipped here: no CUDA device") or a matrix package that could not be installed here; "" for any other
    error (a failure)."""
    missing = missing_hardware(error) or missing_package(error)
    return f"{SKIPPED_HERE}{missing}" if missing else ""


def lacks_hardware(why: str) -> bool:
    """Whether a skipped row's reason is hardware this machine lacks (skipped_here), not asv's skip."""
    return why.startswith(SKIPPED_HERE)
