"""torchbench from Python, without the command line (as pyperf has its API beside its CLI).

    import torchbench
    report = torchbench.compare_commits("~/src/mylib", "main", "my-branch", out="/tmp/tb")
    report.exit_status(), [(v.name, v.status, v.comparison.ratio) for v in report.rows]

    history = torchbench.read_history("/tmp/tb")      # asv's result files as rows with raw samples
    torchbench.publish_site("/tmp/tb")                 # the site of a folder `run_history` measured
    steps = torchbench.find_steps("~/src/mylib", out="/tmp/tb")    # `torchbench find`
    torchbench.profile_cases("~/src/mylib", out="/tmp/tb")         # `torchbench profile`
    torchbench.merge_results(["/tmp/machine2"], out="/tmp/tb")      # `torchbench merge`

REPO None is the embedded example library (the command line's default is the
repository you stand in: pass its path here). A repository's own asv.conf.json
(at its root, or in benchmarks/, asv_bench/ or benchmark/; or CONFIG) is read
and layered under torchbench's additions, as the commands do.

Every function takes typed options (torchbench.ab.options, the *Options
dataclasses) and returns typed objects; bad input raises torchbench.UserError.
"""

from __future__ import annotations

from pathlib import Path

from .ab.options import Policy, Rounds
from .alert.comment import AlertReport
from .alert.pull_request import AlertOptions, alert, alert_from_results
from .asv_bridge import results
from .asv_bridge.merge import Merged, merge_history
from .asv_bridge.workspace import open_workspace
from .errors import UserError
from .asv_bridge.results import ResultSet
from .history import find as _find
from .history.find import FindOptions, StepsFound
from .history.report import RunReport
from .history.run import Existing, HistoryOptions, measure_history
from .profiling.record import Profiled, ProfileOptions, profile_history
from .project import commits as _commits
from .project.commits import Selection
from .project.folders import locked_folders
from .publish.site import publish as _publish_with, publish_folder

__all__ = ["AlertOptions", "AlertReport", "Existing", "FindOptions", "HistoryOptions", "Merged", "Policy",
           "ProfileOptions", "Profiled", "ResultSet", "Rounds", "RunReport", "Selection", "StepsFound",
           "compare_commits", "compare_results", "find_steps", "merge_results", "profile_cases", "publish_site",
           "read_history", "run_history"]

PathLike = str | Path


def _path(p: PathLike | None) -> Path | None:
    return None if p is None else Path(p).expanduser()


def compare_commits(repo: PathLike | None, base: str, head: str, *, out: PathLike = ".torchbench",
                    options: AlertOptions = AlertOptions(), benchmarks: PathLike | None = None,
                    env_dir: PathLike | None = None, config: PathLike | None = None) -> AlertReport:
    """Measure HEAD against BASE of REPO (None: the embedded example) in rounds of alternating processes (or of
    duets: options.rounds.schedule) and decide every benchmark case: the pull-request verdict (`torchbench
    alert`). OUT keeps the evidence."""
    with locked_folders(_path(out), _path(env_dir), _path(repo), _path(config)) as folders:
        return alert(folders, base, head, options, benchmarks=_path(benchmarks))


RESULTS_LAYOUT = ("asv's results layout: result files RESULTS/MACHINE/COMMIT-ENV.json as `asv run` writes them "
                  "(RESULTS/benchmarks.json beside the machine folders), given as the files themselves, a machine "
                  "folder or a results folder")


def compare_results(base: list[PathLike], head: list[PathLike], policy: Policy = Policy()) -> AlertReport:
    """The verdict from asv result files that already exist, each file one process (`torchbench alert
    --base-results ... --head-results ...`).

    BASE and HEAD are in asv's results layout: result files RESULTS/MACHINE/COMMIT-ENV.json, as `asv run
    --record-samples` (or `torchbench run`, under OUT/results) writes them, with RESULTS/benchmarks.json beside
    the machine folders; give the files themselves, a machine folder or a results folder. Each side must hold
    one commit. A path that holds no such file is a UserError that says so."""
    paths = {side: [Path(p).expanduser() for p in ps] for side, ps in (("base", base), ("head", head))}
    for side, ps in paths.items():
        for p in ps:
            if not (p.is_file() and p.suffix == ".json" or p.is_dir() and any(p.rglob("*.json"))):
                raise UserError(f"{p} ({side}): no asv result files there; expected {RESULTS_LAYOUT}")
    return alert_from_results(paths["base"], paths["head"], policy)


def run_history(repo: PathLike | None, selection: Selection = Selection(), *, out: PathLike = ".torchbench",
                options: HistoryOptions = HistoryOptions(), existing: Existing | None = None,
                env_dir: PathLike | None = None, publish: bool = True, config: PathLike | None = None) -> RunReport:
    """Measure the selected commits of REPO (None: the embedded example) with asv, then publish the site
    (`torchbench run`). Failed benchmarks and builds are in the report, not raised."""
    with locked_folders(_path(out), _path(env_dir), _path(repo), _path(config)) as folders:
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


def find_steps(repo: PathLike | None, *, out: PathLike = ".torchbench", options: FindOptions = FindOptions(),
               branch: str = "HEAD", pattern: str | None = None, confirm: bool = True,
               benchmarks: PathLike | None = None, env_dir: PathLike | None = None,
               config: PathLike | None = None) -> StepsFound:
    """The steps in OUT's measured history of REPO (None: the embedded example), each new one confirmed by
    re-measuring the commits around it and bisected to its culprit (`torchbench find`). The record is kept in
    OUT/changepoints.json; `torchbench.history.find.render_steps(found, out)` prints it."""
    with locked_folders(_path(out), _path(env_dir), _path(repo), _path(config)) as f:
        newest = _commits.resolve(f.repo, branch)

        def session() -> _find.Session:
            ws = open_workspace(out=f.out, env_dir=f.env_dir, repo_path=f.repo_path, repo=f.repo,
                                project_sha=newest.sha, benchmarks=_path(benchmarks), fds=f.fds, user=f.config)
            return _find.Session(ws, options)

        return _find.find_steps(f.out, f.repo, session, branch=branch, pattern=pattern, confirm=confirm)


def profile_cases(repo: PathLike | None, selection: Selection = Selection(), *, out: PathLike = ".torchbench",
                  options: ProfileOptions = ProfileOptions(), env_dir: PathLike | None = None,
                  config: PathLike | None = None) -> Profiled:
    """py-spy flame graphs of the selected cases at each selected commit of REPO (None: the embedded example),
    into OUT/profiles (`torchbench profile`). Failed cases are in the result, not raised."""
    with locked_folders(_path(out), _path(env_dir), _path(repo), _path(config)) as folders:
        return profile_history(folders, selection, options)


def merge_results(inputs: list[PathLike], *, out: PathLike = ".torchbench", repo: PathLike | None = None,
                  benchmarks: PathLike | None = None, env_dir: PathLike | None = None,
                  config: PathLike | None = None) -> Merged:
    """Several machines' results folders (each a `torchbench run`'s OUT or OUT/results) merged into OUT's one
    history, to publish side by side (`torchbench merge`; then `publish_site(out)`). Unreadable files are
    named in `.skipped`, not raised."""
    with locked_folders(_path(out), _path(env_dir), _path(repo), _path(config)) as folders:
        return merge_history([Path(p).expanduser() for p in inputs], out=folders.out, repo_path=folders.repo_path,
                             repo=folders.repo, benchmarks=_path(benchmarks), env_dir=folders.env_dir,
                             user=folders.config)
