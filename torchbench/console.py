"""The `torchbench` console script: the command line's imports (asv, scipy, jinja: about a second) inside the
interrupt's reach, so that a Ctrl-C during start-up prints one line, not a traceback (cli.main says the same
for an interrupt once the command runs)."""

from __future__ import annotations

import os
import sys

from .errors import EXIT_FAILURE, INTERRUPTED

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    try:
        from .cli import main as command
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr, flush=True)
        # nothing has started yet; an interrupt inside an extension module's import can leave CPython's
        # "unhandled KeyboardInterrupt" mark set, and the interpreter would then kill itself with SIGINT on exit
        os._exit(EXIT_FAILURE)
    return command(argv)
