"""torchbench from Python, without the command line (as pyperf has its API beside its CLI).

    import torchbench
    report = torchbench.compare_commits("~/src/mylib", "main", "my-branch", out="/tmp/tb")
    report.exit_status(), [(v.name, v.status, v.comparison.ratio) for v in report.rows]

    history = torchbench.read_history("/tmp/tb")      # asv's result files as rows with raw samples
    torchbench.publish_site("/tmp/tb")                 # the site of a folder `run_history` measured

Every function takes typed options (torchbench.ab.options, the *Options
dataclasses) and returns typed objects; bad input raises torchbench.UserError.
"""

from __future__ import annotations

from pathlib import Path

from .ab.options import Policy, Rounds
from .alert.comment import AlertReport
from .alert.pull_request import AlertOptions, alert, alert_from_results
from .asv_bridge import results
from .errors import UserError
from .asv_bridge.results import ResultSet
from .history.report import RunReport
from .history.run import Existing, HistoryOptions, measure_history
from .project.commits import Selection
from .project.folders import locked_folders
from .publish.site import publish as _publish_with, publish_folder

__all__ = ["AlertOptions", "AlertReport", "Existing", "HistoryOptions", "Policy", "ResultSet", "Rounds",
           "RunReport", "Selection", "compare_commits", "compare_results", "publish_site", "read_history", "run_history"]

PathLike = str | Path


def _path(p: PathLike | None) -> Path | None:
    return None if p is None else Path(p).expanduser()


def compare_commits(repo: PathLike | None, base: str, head: str, *, out: PathLike = ".torchbench",
                    options: AlertOptions = AlertOptions(), benchmarks: PathLike | None = None,
                    env_dir: PathLike | None = None) -> AlertReport:
    """Measure HEAD against BASE of REPO (None: the embedded example) in rounds of alternating processes (or of
    duets: options.rounds.schedule) and decide every benchmark case: the pull-request verdict (`torchbench
    alert`). OUT keeps the evidence."""
    with locked_folders(_path(out), _path(env_dir), _path(repo)) as folders:
        return alert(folders, base, head, options, benchmarks=_path(benchmarks))


def compare_results(base: list[PathLike], head: list[PathLike], policy: Policy = Policy()) -> AlertReport:
    """The verdict from asv result files or folders that already exist, each file one process."""
    return alert_from_results([Path(p) for p in base], [Path(p) for p in head], policy)


def run_history(repo: PathLike | None, selection: Selection = Selection(), *, out: PathLike = ".torchbench",
                options: HistoryOptions = HistoryOptions(), existing: Existing | None = None,
                env_dir: PathLike | None = None, publish: bool = True) -> RunReport:
    """Measure the selected commits of REPO (None: the embedded example) with asv, then publish the site
    (`torchbench run`). Failed benchmarks and builds are in the report, not raised."""
    with locked_folders(_path(out), _path(env_dir), _path(repo)) as folders:
        report, ws = measure_history(folders, selection, options, existing=existing)
        if publish and not options.quick and not report.problems:
            try:
                report.notes += _publish_with(ws.asv, folders.out)
            except UserError as e:  # the measurements are kept: a failed publish is one more problem reported
                report.problems.append(str(e))
    return report


def read_history(out: PathLike, *, commits: set[str] | None = None) -> ResultSet:
    """The results of an output folder: one row per benchmark case, commit and environment, raw samples
    included (`row.measurement()` gives a torchbench_core Measurement). Unreadable files are named in
    `.warnings` and skipped."""
    return results.load(Path(out).expanduser() / "results", commits=commits)


def publish_site(out: PathLike) -> list[str]:
    """Publish the site of an output folder (`torchbench publish`); returns notes (what still needs the
    internet)."""
    return publish_folder(Path(out).expanduser())
