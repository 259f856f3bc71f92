"""torchbench: a historical performance tracker for PyTorch microbenchmarks, in the style of asv.

The flow, one subpackage a step (imports point down this list, never up):

    project/      define: the tracked repository, its commits, the derived asv configuration, the example
    asv_bridge/   measure and record through asv: its runs, plugin, result files, environments
    profiling/    where the time goes: py-spy flame graphs per commit and case
    ab/           compare two commits: alternating processes, evidence, verdicts
    history/      a history of commits: measuring it, its steps, their confirmation and bisection (find)
    publish/      the static site: Compare tables, series, flame graphs, the steps page
    alert/        the pull-request verdict: comment, evidence site, GitHub
    api.py, cli/  the Python API and the `torchbench` command

errors.py (exit statuses), stats.py, resources.py (package data) and tools.py
(external programs) are used by all of them. The Python API is re-exported here:
`torchbench.compare_commits`, `run_history`, `read_history`, `publish_site`, ...
"""

from .errors import UserError

__version__ = "0.1.0"  # the distribution's version too (pyproject.toml reads it here); on PyPI: torchbench-tracker

__all__ = ["UserError", "AlertOptions", "AlertReport", "Existing", "FindOptions", "HistoryOptions", "Merged",
           "Policy", "ProfileOptions", "Profiled", "ResultSet", "Rounds", "RunReport", "Selection", "StepsFound",
           "compare_commits", "compare_results", "find_steps", "merge_results", "profile_cases", "publish_site",
           "read_history", "run_history"]


def __getattr__(name: str):
    # the API imports asv, scipy and jinja; asv loads our plugins through this package, so stay light until asked
    if name in __all__:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'torchbench' has no attribute {name!r}")
