"""torch's core.utils: flatten, the side-by-side table readers, and a temporary folder removed at exit."""

import atexit
import shutil
import tempfile

from torchbench_core.grouped import flatten, iter_parsed_lines, parse_stmts

_TEMPDIR = None


def get_temp_dir() -> str:
    """One temporary folder for this process, removed when it exits."""
    global _TEMPDIR
    if _TEMPDIR is None:
        _TEMPDIR = tempfile.mkdtemp(prefix="instruction_count_microbenchmarks")
        atexit.register(shutil.rmtree, _TEMPDIR, ignore_errors=True)
    return _TEMPDIR


__all__ = ["flatten", "get_temp_dir", "iter_parsed_lines", "parse_stmts"]
