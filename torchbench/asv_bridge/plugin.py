"""asv plugin loaded by every derived configuration ("plugins": [".torchbench.asv_bridge.plugin"]).

asv 0.6.6 has no hooks for what a tracker must not lose, so `setup()` (which
asv calls when it loads the plugin) wraps five of its functions:

* ``asv.util.write_json`` writes to a temporary file and renames it: asv
  writes results in place, and a run killed while writing leaves half a
  file that every later asv command chokes on.
* ``Environment.install_project`` records whether a commit built, with the
  tail of the build's output when it did not.
* ``Results.save`` also writes an *outcome* record beside the results:
  asv keeps each benchmark's exit code and stderr in memory only ("stderr
  and errcode are not saved to files"), so after the run nobody could say
  why a benchmark failed without scraping asv's console output.

* ``Results.add_result`` counts the processes that measured each benchmark
  (asv calls it once per round, a round being one process, and pools the
  rounds' samples with the process boundaries lost); the outcome record
  keeps the count, which the pages show beside the pooled blocks, and each
  process's *level* per parameter combination (stats.level of that round's
  samples), which the pages need for between-process evidence: whether a
  commit's cell differs from its baseline by more than processes vary.

* ``runner._run_benchmark_single_param`` makes a parameter combination that
  failed for hardware this machine lacks (torchbench_core.skips: "Torch not
  compiled with CUDA enabled", ...) asv's skip: NaN, exit code 0, so asv
  itself shows it as skipped ("n/a"), not failed. Each skipped combination's
  reason (that, or asv's skip by its setup) goes into the outcome record,
  under "skipped", so the run report lists it.

After the run, `torchbench run` adds the instruction counts of each
commit's plain asv `time_` rows to its outcome record (`record_counts`;
history/counts.py), which a later save keeps.

Outcome records live in ``<results_dir>/../outcomes/<machine>/<file>.json``
(outside results_dir: asv loads every .json there as a results file). They
are merged across runs: a benchmark that later succeeds loses its failure.
"""

from __future__ import annotations

import functools
import json
import math
import os
from pathlib import Path

from torchbench_core.skips import SKIPPED_BY_SETUP, skipped_here
from torchbench_core.storage import atomic_path, atomic_write_text

OUTCOME_SCHEMA = "torchbench.outcome/1"
COUNT_KEYS = ("counts", "uncounted")  # what record_counts adds (history/counts.py), kept by every later save
STDERR_TAIL = 4000
_builds: dict[tuple[str, str], dict] = {}  # (env name, commit) -> {"built": bool, "log": str}
# the benchmark being run: (name, parameter index) -> why it was skipped; moved into its Results by add_result
_skips: dict[tuple[str, int], str] = {}
ASV_SKIP = "asv: skipped: "  # what asv_runner prints for a setup that raises NotImplementedError
NO_ROW = "no TimerSpec for this combination"  # a TimerSuite's undefined combination (asv_suite.py): no row


def outcome_path(results_dir: str | os.PathLike, results_filename: str) -> Path:
    return Path(results_dir).resolve().parent / "outcomes" / results_filename


def _atomic_write_json(original, path, data, api_version=None, compact=False):
    with atomic_path(path) as tmp:
        original(str(tmp), data, api_version=api_version, compact=compact)


def _recording_install(original, self, conf, repo, commit_hash=None):
    from asv import util

    try:
        result = original(self, conf, repo, commit_hash)
    except util.ProcessError as e:
        log = "\n".join(part for part in (e.stdout, e.stderr) if part)
        _builds[(self.name, commit_hash)] = {"built": False, "log": f"{e}\n{log[-STDERR_TAIL:]}"}
        raise
    _builds[(self.name, commit_hash)] = {"built": True, "log": ""}
    return result


def _recording_save(original, self, result_dir):
    original(self, result_dir)
    path = outcome_path(result_dir, self._filename)
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        record = {}
    failures = dict(record.get("failures", {}))
    for name, code in self.errcode.items():
        if code:
            failures[name] = {"errcode": code, "stderr": (self.stderr.get(name) or "")[-STDERR_TAIL:]}
        else:
            failures.pop(name, None)
    skipped = dict(record.get("skipped", {}))
    for name in self.errcode:  # the benchmarks run now replace their earlier reasons
        skipped.pop(name, None)
    skipped.update({name: {str(i): why for i, why in by_index.items()}
                    for name, by_index in self.__dict__.get("_torchbench_skips", {}).items()})
    build = _builds.get((self.env_name, self.commit_hash), record.get("build"))
    processes = dict(record.get("processes", {}))
    levels = dict(record.get("levels", {}))
    counted = self.__dict__.get("_torchbench_processes", {})
    base = self.__dict__.setdefault("_torchbench_base", {})  # what earlier runs counted, for appended samples
    for name, (count, appended, found) in counted.items():
        if name not in base:
            base[name] = ((processes.get(name), levels.get(name)) if appended else (0, None))
        before, before_levels = base[name]
        if before is None:  # appended to samples whose processes nobody counted
            processes.pop(name, None)
            levels.pop(name, None)
            continue
        processes[name] = before + count
        if before and (not isinstance(before_levels, list) or len(before_levels) != len(found)):
            levels.pop(name, None)  # earlier processes whose levels nobody kept: the list would mislead
        else:
            levels[name] = [list(old or []) + new for old, new in zip(before_levels or [None] * len(found), found)]
    record = {"schema": OUTCOME_SCHEMA, "commit_hash": self.commit_hash, "env_name": self.env_name,
              "build": build, "failures": failures, "skipped": skipped, "processes": processes, "levels": levels,
              # a commit's instruction counts (record_counts) stay: the same code counts the same
              **{key: record[key] for key in COUNT_KEYS if key in record}}
    atomic_write_text(path, json.dumps(record, indent=1, sort_keys=True))


def record_counts(results_dir: str | os.PathLike, results_filename: str, commit_hash: str, env_name: str,
                  counts: dict[str, dict[int, list[float]]], uncounted: dict[str, dict[int, str]]) -> None:
    """Add instruction counts of a results file's benchmarks (name -> parameter index -> counts per call,
    one per repeat) and the reasons of those without (name -> index -> why) to its outcome record
    (atomically; a combination counted now loses an earlier reason, and the other way round)."""
    path = outcome_path(results_dir, results_filename)
    try:
        record = json.loads(path.read_text())
    except FileNotFoundError:
        record = {"schema": OUTCOME_SCHEMA, "commit_hash": commit_hash, "env_name": env_name, "build": None,
                  "failures": {}}
    kept = {key: {name: dict(v) for name, v in dict(record.get(key, {})).items()} for key in COUNT_KEYS}
    for key, found, other in (("counts", counts, "uncounted"), ("uncounted", uncounted, "counts")):
        for name, by_index in found.items():
            for index, value in by_index.items():
                kept[key].setdefault(name, {})[str(index)] = value
                kept[other].get(name, {}).pop(str(index), None)
    record.update({key: {name: v for name, v in kept[key].items() if v} for key in COUNT_KEYS})
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(record, indent=1, sort_keys=True))


def _skipping_run(original, benchmark, spawner, param_idx, *args, **kwargs):
    """One parameter combination run by asv; one that failed for hardware this machine lacks becomes asv's
    skip (NaN, exit code 0, its output kept), and a skipped one's reason is noted for add_result."""
    res = original(benchmark, spawner, param_idx, *args, **kwargs)
    why = skipped_here(res.stderr) if res.errcode else ""
    if why:
        res = res._replace(result=[math.nan] * len(res.result), errcode=0)
    elif ASV_SKIP in (res.stderr or "") and NO_ROW not in res.stderr:
        why = SKIPPED_BY_SETUP
    if why:
        _skips[(benchmark["name"], param_idx or 0)] = why
    return res


def _counting_add(original, self, benchmark, result, *args, **kwargs):
    original(self, benchmark, result, *args, **kwargs)
    name = benchmark["name"]
    skips = {index: _skips.pop((of, index)) for of, index in list(_skips) if of == name}
    if skips:
        self.__dict__.setdefault("_torchbench_skips", {}).setdefault(name, {}).update(skips)
    if all(r is None for r in result.result):  # a failed round measured nothing
        return
    counted = self.__dict__.setdefault("_torchbench_processes", {})
    found = [_round_level(samples, value) for samples, value in zip(result.samples, result.result)]
    if kwargs.get("append_samples") and name in counted:
        count, appended, levels = counted[name]
        counted[name] = (count + 1, appended, [old + new for old, new in zip(levels, found)])
    else:  # a first round; appended to an earlier run's samples where asv says so
        counted[name] = (1, bool(kwargs.get("append_samples")), found)


def _round_level(samples, value) -> list[float]:
    """One round's (one process's) level of one parameter combination, as a list of none or one value:
    stats.level of its samples (asv's value where it kept none); nothing where the round measured nothing.
    stats (and numpy) are imported here, not at the top: asv loads this module in every command."""
    from .. import stats

    if samples:
        return [stats.level(samples)]
    if value is None or (isinstance(value, float) and value != value):  # failed or skipped
        return []
    return [float(value)]


def setup() -> None:
    """asv's plugin hook: called once when the configuration loads this module."""
    from asv import environment, results, runner, util

    if getattr(util.write_json, "_torchbench", False):
        return
    wrapped = functools.partial(_atomic_write_json, util.write_json)
    wrapped._torchbench = True
    util.write_json = wrapped
    install, save = environment.Environment.install_project, results.Results.save
    add = results.Results.add_result
    environment.Environment.install_project = lambda self, *args: _recording_install(install, self, *args)
    results.Results.save = lambda self, result_dir: _recording_save(save, self, result_dir)
    results.Results.add_result = lambda self, *args, **kwargs: _counting_add(add, self, *args, **kwargs)
    run_one = runner._run_benchmark_single_param
    runner._run_benchmark_single_param = lambda *args, **kwargs: _skipping_run(run_one, *args, **kwargs)
