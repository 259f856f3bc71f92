"""Several machines' asv results -> one results folder in asv's per-machine layout.

A history on many machines is measured one job per machine (each its own
`torchbench run`, its own results folder), then merged where it is published:

    results/benchmarks.json             the suite's benchmarks (asv's; the union of the inputs')
    results/<machine>/machine.json      each machine's description
    results/<machine>/<commit>-<env>.json

asv's layout already keeps machines apart, so merging is a union of machine
folders: a result file that the destination does not have is added; one it
has with other content is replaced by the input's (a machine's newest job is
its truth for the commits it measured) and said; the same content is left
alone. Every file is read with asv's own API before it is copied
(`asv.results.Results.load`, `asv.util.load_json`), so a malformed file is
named and skipped, and nothing else is lost. Writes are atomic.

Nothing here fits a library: asv has no merge command (`asv publish` reads
one results folder), so the union is written out below.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from asv import util
from asv.results import Results
from torchbench_core.storage import atomic_path, atomic_write_text

from ..errors import UserError
from ..project import commits, config

__all__ = ["Merged", "merge_history", "merge_results", "results_folder"]

BENCHMARKS = "benchmarks.json"
MACHINE = "machine.json"


@dataclass
class Merged:
    """What a merge did, per machine; and what it could not use (each named, with why)."""

    added: dict[str, int] = field(default_factory=dict)  # machine -> result files added
    replaced: dict[str, int] = field(default_factory=dict)  # machine -> result files replaced by newer content
    unchanged: dict[str, int] = field(default_factory=dict)
    benchmarks: int = 0  # benchmarks in the merged benchmarks.json
    skipped: list[str] = field(default_factory=list)

    @property
    def machines(self) -> list[str]:
        return sorted(set(self.added) | set(self.replaced) | set(self.unchanged))

    def report(self) -> str:
        lines = [f"merged {len(self.machines)} machine(s), {self.benchmarks} benchmark(s):"]
        for m in self.machines:
            lines.append(f"  {m}: {self.added.get(m, 0)} result file(s) added, {self.replaced.get(m, 0)} replaced "
                         f"by newer content, {self.unchanged.get(m, 0)} already there")
        lines += [f"  skipped: {why}" for why in self.skipped]
        return "\n".join(lines)


def results_folder(path: Path) -> Path:
    """An asv results folder (holding benchmarks.json), given it or an output folder that holds one (OUT/results)."""
    for candidate in (path, path / "results"):
        if (candidate / BENCHMARKS).is_file():
            return candidate
    raise UserError(f"{path}: not an asv results folder (no {BENCHMARKS} in it or in {path / 'results'})")


def _load_json(path: Path, what: str) -> dict:
    try:
        return util.load_json(str(path))
    except (util.UserError, OSError, ValueError) as e:
        raise UserError(f"{path}: unreadable {what} ({e})") from None


def _same(a: Path, b: Path) -> bool:
    return a.stat().st_size == b.stat().st_size and a.read_bytes() == b.read_bytes()


def _copy(src: Path, dest: Path) -> None:
    with atomic_path(dest) as tmp:
        shutil.copyfile(src, tmp)


def merge_results(inputs: list[Path], dest: Path) -> Merged:
    """Merge the results folders (or output folders) `inputs`, in order, into the results folder `dest`
    (made if missing; what it already holds is kept unless an input replaces it)."""
    if not inputs:
        raise UserError("nothing to merge: give at least one results folder")
    folders = [results_folder(p) for p in inputs]  # every input checked before anything is written
    merged = Merged()
    dest.mkdir(parents=True, exist_ok=True)
    benchmarks: dict = {}
    if (dest / BENCHMARKS).is_file():
        benchmarks = _load_json(dest / BENCHMARKS, "benchmarks.json")
    for folder in folders:
        try:
            benchmarks.update(_load_json(folder / BENCHMARKS, "benchmarks.json"))
        except UserError as e:
            merged.skipped.append(str(e))
            continue
        for machine_dir in sorted(p for p in folder.iterdir() if p.is_dir()):
            _merge_machine(machine_dir, dest / machine_dir.name, merged)
    benchmarks["version"] = benchmarks.get("version", 2)
    merged.benchmarks = sum(1 for k in benchmarks if k != "version")
    atomic_write_text(dest / BENCHMARKS, json.dumps(benchmarks, indent=4, sort_keys=True))
    return merged


def _merge_machine(src: Path, dest: Path, merged: Merged) -> None:
    machine = src.name
    if not (src / MACHINE).is_file():
        merged.skipped.append(f"{src}: no {MACHINE}, not a machine's results")
        return
    try:
        _load_json(src / MACHINE, "machine description")
    except UserError as e:
        merged.skipped.append(str(e))
        return
    if not (dest / MACHINE).is_file() or not _same(src / MACHINE, dest / MACHINE):
        _copy(src / MACHINE, dest / MACHINE)
    for path in sorted(src.glob("*.json")):
        if path.name == MACHINE:
            continue
        try:
            Results.load(str(path), machine)  # asv's own reader: a file asv publish could not read is not copied
        except (util.UserError, OSError, ValueError, KeyError, TypeError) as e:
            merged.skipped.append(f"{path}: not an asv result file ({e})")
            continue
        target = dest / path.name
        if not target.exists():
            counter = merged.added
        elif _same(path, target):
            merged.unchanged[machine] = merged.unchanged.get(machine, 0) + 1
            continue
        else:
            counter = merged.replaced
        _copy(path, target)
        counter[machine] = counter.get(machine, 0) + 1


def merge_history(inputs: list[Path], *, out: Path, repo_path: Path, repo, benchmarks: Path | None,
                  env_dir: Path, user=None) -> Merged:
    """Merge `inputs` into OUT/results and derive OUT/asv.conf.json for REPO (as `torchbench run` does), so
    that `torchbench publish --out OUT` publishes the machines side by side."""
    merged = merge_results(inputs, out / "results")
    subdir = str(user.values.get("repo_subdir", "")) if user else ""  # user: the repository's own asv config
    project = config.read_project(repo, commits.resolve(repo, "HEAD").sha, repo_path.name, subdir)
    config.derive(repo=repo_path, project=project, out=out, env_dir=env_dir,
                  benchmark_dir=config.benchmark_dir(repo_path, benchmarks, user=user), user=user)
    return merged
