"""How a child process ended, in words, for every error that names one (valgrind, C++ programs, workers)."""

from __future__ import annotations

import signal

__all__ = ["describe_exit"]


def describe_exit(returncode: int | None) -> str:
    """A process's end in words: "killed by SIGSEGV" or "exit code 1" (a negative code is a signal, as
    subprocess and multiprocessing report it)."""
    if returncode is not None and returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:  # a real-time signal has no name
            return f"killed by signal {-returncode}"
    return f"exit code {returncode}"
