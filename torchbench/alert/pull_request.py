"""`torchbench alert`: did this change make anything slower? A verdict that survives a noisy machine.

    define (suite, base, head) -> build both into one asv environment, side by side
    -> measure (alternating processes, adaptive; torchbench.ab) -> count instructions (valgrind, once a side)
    -> decide (stats, FDR) -> evidence site with flame graphs -> report (Markdown comment, JSON, exit status)

The upgrade verdict (AlertOptions.base_torch and head_torch): one commit, or
two, measured in two asv environments of different torch releases, with the
same process-level statistics.

Or, with asv result files that already exist, decide from them (each file is
one process's evidence per benchmark): `alert_from_results`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from ..ab.options import Policy, Rounds
from ..ab.pair import evidence_from_results, measure_pair
from ..ab.verdict import decide
from ..asv_bridge.workspace import open_workspace
from ..errors import UserError
from ..project import commits, config
from ..project.folders import Folders
from . import evidence_site
from .comment import AlertReport

__all__ = ["AlertOptions", "alert", "alert_from_results"]


@dataclass(frozen=True)
class AlertOptions:
    """How a pull request's change is measured and decided."""

    rounds: Rounds = field(default_factory=Rounds)
    policy: Policy = field(default_factory=Policy)
    patterns: tuple[str, ...] = ()  # only benchmarks whose name matches one of these
    profile: bool = True  # flame graphs of each regression (py-spy)
    site_url: str | None = None  # where WORK/site will be served: the comment then links into it
    base_torch: str | None = None  # the upgrade verdict: the base side's torch release (an environment each)
    head_torch: str | None = None

    def __post_init__(self):
        if (self.base_torch is None) != (self.head_torch is None):
            raise UserError("give both --base-torch and --head-torch (the upgrade verdict), or neither")
        if self.base_torch is not None:
            config.check_torch_versions((self.base_torch, self.head_torch))

    @property
    def torch(self) -> dict[str, str] | None:
        return {"base": self.base_torch, "head": self.head_torch} if self.base_torch is not None else None


def alert(folders: Folders, base_rev: str, head_rev: str, options: AlertOptions = AlertOptions(), *,
          benchmarks: Path | None = None) -> AlertReport:
    """Measure head against base in FOLDERS (locked: project.folders.locked_folders) and decide."""
    base, head = commits.resolve(folders.repo, base_rev), commits.resolve(folders.repo, head_rev)
    torch = options.torch
    ws = open_workspace(out=folders.out, env_dir=folders.env_dir, repo_path=folders.repo_path, repo=folders.repo,
                        project_sha=head.sha, benchmarks=benchmarks, fds=folders.fds,
                        torch=tuple(dict.fromkeys(torch.values())) if torch else (), user=folders.config)
    try:
        measured = measure_pair(ws, base, head, options.rounds, options.policy, patterns=options.patterns,
                                torch=torch)
        rows = decide(measured.evidence, options.policy)
        started = time.monotonic()
        site = _site(measured, rows, base, head, folders.out, options)
        measured.evidence.phases["evidence site"] = time.monotonic() - started
    except KeyboardInterrupt:
        raise UserError("interrupted before a verdict") from None
    evidence = measured.evidence
    report = AlertReport(base, head, rows, options.policy, evidence.rounds, evidence.notes + site.notes,
                         measured.problems, {name: link.__dict__ for name, link in site.links.items()},
                         options.site_url, evidence.time_spent(), torch or {})
    try:
        evidence_site.write_verdicts(site, report.verdicts_html(site.tables))
    except OSError as e:
        report.notes.append(f"the evidence site's verdict page was not written: {e}")
    return report


def _site(measured, rows, base, head, out: Path, options: AlertOptions) -> evidence_site.Site:
    """The evidence site and each regression's links; a failure to write it is a note, never a lost verdict."""
    if measured.work is None:  # nothing was measured
        return evidence_site.Site()
    try:
        return evidence_site.build_site(measured, rows, base, head, out=out, profile=options.profile,
                                        site_url=options.site_url)
    except (OSError, RuntimeError, ValueError) as e:
        return evidence_site.Site(notes=[f"the evidence site was not written: {type(e).__name__}: {e}"])


def alert_from_results(base: list[Path], head: list[Path], policy: Policy = Policy()) -> AlertReport:
    """The verdict from asv result files or folders that already exist (each file one process)."""
    evidence, base_sha, head_sha = evidence_from_results(base, head)
    rows = decide(evidence, policy)
    return AlertReport(commits.Commit(base_sha, ""), commits.Commit(head_sha, ""), rows, policy, evidence.rounds,
                       evidence.notes)
