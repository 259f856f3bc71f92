"""Exit-status policy of the torchbench command (asv's UserError pattern).

Every subcommand prints its report first, then exits with:

  0  everything asked for was measured (and, for `alert`, nothing regressed)
  1  a regression (`alert` only)
  2  something failed: a benchmark, a build, a malformed input, or the tool

A `UserError` is a failure the user can act on; `cli.main` prints its
message (no traceback) and exits 2.
"""

from __future__ import annotations

__all__ = ["EXIT_FAILURE", "EXIT_OK", "EXIT_REGRESSION", "UserError", "last_line"]

EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_FAILURE = 2


class UserError(Exception):
    """Bad input or a failed step, with a message that says what and where."""


def last_line(text: str | None) -> str:
    """The last non-blank line of a failing step's output: what a one-line report names."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1] if lines else "no error output"
