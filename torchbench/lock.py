"""One run per output folder, through an advisory lock (flock).

Written here rather than taken from `filelock` because the lock must be
inherited: asv runs as a child process with the lock's descriptor, so if
this process is killed while asv goes on, the folder stays locked until asv
is done too (flock locks belong to the open file, which both processes share).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import Iterator

from .errors import UserError

__all__ = ["LOCK_NAME", "exclusive"]

LOCK_NAME = ".torchbench.lock"


@contextlib.contextmanager
def exclusive(folder: Path, what: str = "output folder") -> Iterator[int]:
    """Hold FOLDER/.torchbench.lock; yields its descriptor (pass it to children that must keep it)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
            raise UserError(f"{folder}: this {what} is in use by another torchbench run ({holder}); "
                            f"wait for it to finish, or use another folder") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}".encode(), 0)
        yield fd
    finally:
        os.close(fd)
