"""Exit-status policy of the torchbench command (asv's UserError pattern), in one place.

Every subcommand prints its report first, then exits with:

  0  everything asked for was done (and, for `alert`, nothing regressed)
  1  a regression (`alert` only: the one status a workflow may read as "slower")
  2  something failed: a benchmark, a build, a malformed input, a bad option, or the tool itself
  3  inconclusive (`find --good/--bad`: the bisection could not name one commit)

A `UserError` is a failure the user can act on; `cli.main` prints its
message (no traceback) and exits 2. Any other exception also exits 2, with
one line naming the step and the error and the traceback kept in a file.
"""

from __future__ import annotations

__all__ = ["EXIT_FAILURE", "EXIT_INCONCLUSIVE", "EXIT_OK", "EXIT_REGRESSION", "EXIT_STATUSES", "INTERRUPTED", "UserError",
           "last_line"]

EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_FAILURE = 2
EXIT_INCONCLUSIVE = 3
INTERRUPTED = "torchbench: interrupted"  # the one line a Ctrl-C prints, whenever it comes (exit status 2)

EXIT_STATUSES = {EXIT_OK: "done", EXIT_REGRESSION: "a regression (alert only)",
                 EXIT_FAILURE: "a failure (benchmark, build, input, option or the tool)",
                 EXIT_INCONCLUSIVE: "inconclusive (find --good/--bad)"}


class UserError(Exception):
    """Bad input or a failed step, with a message that says what and where."""


def last_line(text: str | None) -> str:
    """The last non-blank line of a failing step's output: what a one-line report names."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1] if lines else "no error output"
