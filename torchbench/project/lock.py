"""One run per output folder, through an advisory lock (flock).

Written here rather than taken from `filelock` because the lock must be
inherited: asv runs as a child process with the lock's descriptor, so if
this process is killed while asv goes on, the folder stays locked until asv
is done too (flock locks belong to the open file, which both processes share).

Holding the lock also makes it safe to clear what a killed writer left: every
file here is written atomically (a hidden ``.NAME.*.tmp`` renamed into place),
and SIGKILL between the write and the rename leaves the temporary behind. No
run can be writing one while we hold the lock, so `exclusive` removes them.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import Iterator

from ..errors import UserError

__all__ = ["LOCK_NAME", "exclusive", "remove_stale_temporaries"]

LOCK_NAME = ".torchbench.lock"


@contextlib.contextmanager
def exclusive(folder: Path, what: str = "output folder", sweep: bool = True) -> Iterator[int]:
    """Hold FOLDER/.torchbench.lock; yields its descriptor (pass it to children that must keep it).

    With SWEEP, first remove the temporaries a killed writer left in FOLDER.
    """
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
        if sweep:
            remove_stale_temporaries(folder)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}".encode(), 0)
        yield fd
    finally:
        os.close(fd)


UNSWEPT = ("installs", "html")  # OUT's folders that hold none of our temporaries


def remove_stale_temporaries(folder: Path) -> list[Path]:
    """Remove FOLDER's leftover atomic-write temporaries; call only while holding FOLDER's lock.

    A subfolder with a lock of its own (an environment folder kept inside the
    output folder) belongs to another lock and is left alone, and so are the
    two big trees where we never write through a temporary: OUT/installs (each
    commit's install, renamed into place whole) and OUT/html (asv empties it
    on every publish).
    """
    removed = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not (Path(root, d, LOCK_NAME)).exists()
                   and not (Path(root) == Path(folder) and d in UNSWEPT)]
        for name in files:
            if name.startswith(".") and name.endswith(".tmp"):
                path = Path(root, name)
                path.unlink(missing_ok=True)
                removed.append(path)
    return removed
