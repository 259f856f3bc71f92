"""What a publish keeps for the next one, in OUT/cache/site, so that it redoes only what changed.

    records/<machine>/<file>.pickle   what the pages made of each result file (pages.FileCells), with the
                                      file's stamp (size, mtime, benchmarks.json's digest): an unchanged
                                      file is not read through asv again
    windows.pickle                    the change-point search's candidates per window of a series
                                      (changepoints.detect's memo): a new commit re-searches only the
                                      windows it falls in
    pages/                            each label's rendered pages, under the digest of everything they
                                      show: a label whose cells, commits and flame graphs are unchanged
                                      is copied, not rendered

Every entry is checked against what it was made from and is remade when it
does not match, when it cannot be read, or when the code that made it changed
(`RENDERER`, a digest of our templates and modules). The cache is ours alone:
it is pickled, written atomically, and deleting it only costs time.
"""

from __future__ import annotations

import functools
import hashlib
import pickle
import shutil
from pathlib import Path
from typing import Iterator

from torchbench_core.storage import atomic_write_bytes

from .. import resources
from ..asv_bridge import results
from . import pages

__all__ = ["SiteCache", "keep_records", "renderer"]

FOLDER = Path("cache") / "site"


@functools.lru_cache(maxsize=1)
def renderer() -> str:
    """A digest of what makes the pages: our templates and modules (a new version renders afresh)."""
    h = hashlib.sha1()
    for path in resources.package_files("publish", "history", "profiling", "asv_bridge"):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _load(path: Path, key) -> object | None:
    try:
        with path.open("rb") as f:
            stored_key, value = pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError, ValueError, TypeError, AttributeError, ImportError):
        return None
    return value if stored_key == key else None


def _store(path: Path, key, value) -> None:
    # without fsync: a cache lost to a power cut costs only time, and a cold publish writes one entry per
    # result file (2000 fsyncs would cost seconds)
    atomic_write_bytes(path, pickle.dumps((key, value), protocol=pickle.HIGHEST_PROTOCOL), fsync=False)


def keep_records(entry: Path, key: tuple, measured: results.Measured) -> list[pages.FileCells]:
    """A result file's records (pages.file_cells of its measured cells), stored in the cache under `key`."""
    found = [pages.file_cells(measured)] if measured.benchmark else []
    _store(entry, key, found)
    return found


class SiteCache:
    def __init__(self, out_dir: Path):
        self.root = out_dir / FOLDER
        self.read = self.reused = 0  # result files read through asv / taken from the cache
        self.shared = 0  # result files taken as asv's publish had read them (prime)
        self.primed: set[Path] = set()  # their cache entries: counted by prime, not again by records
        self.rendered = self.copied = 0  # labels rendered / copied

    # -- result files ----------------------------------------------------------------------------------
    def records(self, results_dir: Path, warnings: list[str]) -> Iterator[pages.FileCells]:
        """pages.records of every readable result file; from the cache where the file is unchanged."""
        seen = set()
        for file in results.iter_files(results_dir, warnings):
            entry = self._entry(file)
            seen.add(entry)
            found, was_read = self._records(file, entry)
            if entry not in self.primed:  # a primed file is counted once, by prime
                self.read += was_read
                self.reused += not was_read
            yield from found
        for stale in (self.root / "records").glob("*/*.pickle"):  # a result file that is gone
            if stale not in seen:
                stale.unlink(missing_ok=True)

    def prime(self, file: results.ResultFile) -> None:
        """Keep the records of a file read elsewhere (asv's publish has parsed it: loaded_file), so that
        `records` takes them from the cache instead of parsing the file again (inside asv's publish, a
        forked helper does this on the other core while asv reads on: publisher._sharing)."""
        entry = self._entry(file)
        if entry in self.primed:  # asv parses every file twice
            return
        self.primed.add(entry)
        key = (renderer(), file.stamp)
        if _load(entry, key) is not None:
            self.reused += 1
            return
        self.shared += 1
        measured = file.measure()
        if measured is not None:  # else named in a warning by the reader; nothing to keep
            keep_records(entry, key, measured)

    def _entry(self, file: results.ResultFile) -> Path:
        return self.root / "records" / file.path.parent.name / f"{file.path.name}.pickle"

    def _records(self, file: results.ResultFile, entry: Path) -> tuple[list[pages.FileCells], bool]:
        """The file's records, and whether they were read (and kept) rather than taken from the cache."""
        key = (renderer(), file.stamp)
        found = _load(entry, key)
        if found is not None:
            return found, False
        measured = file.measure()
        if measured is None:  # named in a warning by the reader; nothing to keep
            return [], True
        return keep_records(entry, key, measured), True

    # -- change-point windows --------------------------------------------------------------------------
    def windows(self) -> dict:
        """changepoints.detect's memo from the last publish (empty when there is none)."""
        found = _load(self.root / "windows.pickle", renderer())
        return found if isinstance(found, dict) else {}

    def keep_windows(self, used: dict) -> None:
        """Keep the windows this publish looked at (changepoints.Windows.used), and only those."""
        _store(self.root / "windows.pickle", renderer(), used)

    # -- pages -----------------------------------------------------------------------------------------
    def page(self, name: str, digest: str, targets: dict[str, Path]) -> bool:
        """Copy the label's pages rendered under `digest` to `targets` (their names -> where); False when
        they must be rendered."""
        folder = self.root / "pages" / name
        if _load(folder / "digest.pickle", renderer()) != digest:
            return False
        if not all((folder / f).is_file() for f in targets):
            return False
        for f, dest in targets.items():
            shutil.copyfile(folder / f, dest)
        return True

    def keep_page(self, name: str, digest: str, targets: dict[str, Path]) -> None:
        folder = self.root / "pages" / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "digest.pickle").unlink(missing_ok=True)  # no digest over half-copied pages
        for f, dest in targets.items():
            shutil.copyfile(dest, folder / f)
        _store(folder / "digest.pickle", renderer(), digest)

    def count_pages(self, rendered: int, copied: int) -> None:
        """Labels rendered and copied, for the summary: counted by the caller, as `page` and `keep_page`
        may run in forked workers (forked.map_forked) whose counts would stay there."""
        self.rendered += rendered
        self.copied += copied

    def summary(self) -> str:
        shared = f", {self.shared} as asv's publish read them" if self.shared else ""
        return (f"result files: {self.read} read{shared}, {self.reused} from the cache; "
                f"labels: {self.rendered} rendered, {self.copied} unchanged")
