"""asv's own verdict between two commits, through its Python API.

`asv.commands.compare.Compare.print_table` prints asv's table and returns
(worsened, improved); a benchmark that newly fails counts as worsened. It is
fed the Results that results.load read (malformed files already skipped),
not asv's own file iterator. This is asv's per-benchmark Mann-Whitney test
on the blocks of a few processes, as if they were independent: informative,
not a verdict to gate on (see `torchbench alert`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .results import ResultSet

__all__ = ["AsvVerdict", "print_table"]


@dataclass(frozen=True)
class AsvVerdict:
    machine: str
    worsened: bool
    improved: bool


def _resultset(results: ResultSet, machine: str, commit: str):
    for file_machine, asv_results in results.files:
        if file_machine != machine or asv_results.commit_hash != commit:
            continue
        for key in asv_results.get_all_result_keys():
            params = asv_results.get_result_params(key)
            yield (key, params, asv_results.get_result_value(key, params),
                   asv_results.get_result_stats(key, params), asv_results.get_result_samples(key, params),
                   asv_results.benchmark_version.get(key), machine, asv_results.env_name)


def print_table(conf_path: Path, results: ResultSet, base: str, head: str, *, factor: float = 1.1,
            names: dict[str, str] | None = None) -> list[AsvVerdict]:
    """Print asv's compare table of base -> head for each machine that has both; return the verdicts."""
    from asv.commands.compare import Compare
    from asv.config import Config

    conf = Config.load(str(conf_path))
    verdicts = []
    machines = sorted({m for m, r in results.files if r.commit_hash == base} &
                      {m for m, r in results.files if r.commit_hash == head})
    for machine in machines:
        worsened, improved = Compare.print_table(
            conf, base, head, factor=factor, split=True, machine=machine,
            resultset_1=_resultset(results, machine, base), resultset_2=_resultset(results, machine, head),
            commit_names=names)
        verdicts.append(AsvVerdict(machine, bool(worsened), bool(improved)))
    return verdicts
