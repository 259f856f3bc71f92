"""The alert's evidence as a site, and the links the comment gives for each regression.

Seed 004's procedure, automated: for every regression, flame graphs of the
case on base and on head (py-spy, `torchbench profile`'s recorder) and the
differential between them, plus a Compare page of the two commits whose
cells are the per-process values the verdict was drawn from (so its
intervals are between processes, unlike a history's). The pages are the
publisher's own (publisher.render_pages), written to WORK/site; the GitHub
workflow uploads that folder with the report.

Links are absolute when the site will be served somewhere (--site-url);
otherwise the comment names the files inside the site folder.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from torchbench_core.storage import atomic_write_text

from .. import stats, tools
from ..ab.evidence import Evidence, Job
from ..ab.pair import Measured, patterns_for
from ..ab.sides import side_env
from ..ab.verdict import Verdict
from ..asv_bridge.results import ResultSet, Row as ResultRow, param_value
from ..profiling.record import profile_cases
from ..project.commits import Commit
from ..publish import pages, publisher

__all__ = ["ENV_NAME", "MACHINE", "VERDICTS", "Links", "Site", "build_site", "write_verdicts"]

MACHINE = "alert"
VERDICTS = "verdicts.html"  # every row of the alert, in the comment's order
ENV_NAME = "alternating-processes"


@dataclass(frozen=True)
class Links:
    table: str
    base: str | None = None  # flame graphs: base, head, differential
    head: str | None = None
    diff: str | None = None


def _env_name(torch: str) -> str:
    """A side's environment, named as asv names one by its requirements (torch<release>) where it has one."""
    return f"{ENV_NAME}-torch{torch}" if torch else ENV_NAME


def _result_rows(evidence: Evidence, base: Commit, head: Commit, torch: dict[str, str]) -> ResultSet:
    """Each side's per-process values as one row per benchmark: the samples of a Compare cell. Sides in
    different torch releases are different environments (asv's naming: torch<release>), one Compare group each."""
    found = ResultSet()
    for side, commit in (("base", base), ("head", head)):
        env_name = _env_name(torch.get(side, ""))
        for (name, index), values in evidence.values[side].items():
            info = evidence.jobs[(name, index)]
            names = info.param_names or [f"param{i + 1}" for i in range(len(info.params))]
            found.rows.append(ResultRow(
                machine=MACHINE, commit=commit.sha, env_name=env_name, benchmark=name, index=index,
                params=tuple((n, param_value(v)) for n, v in zip(names, info.params)),
                value=stats.process_summary(values), samples=tuple(values), number=1, stats=None,
                unit=info.unit, date=None, processes=len(values), levels=tuple(values)))
    return found


def _profile(measured: Measured, commits: dict[str, Commit], jobs: set[Job], out: Path) -> list[str]:
    """Flame graphs of the regressed cases on both sides; returns notes on what was not recorded."""
    pyspy = tools.find("py-spy")
    if pyspy is None:
        return ["flame graphs not recorded: py-spy is not installed"]
    notes = []
    for name, side in measured.sides.items():
        print(f"== flame graphs of {len(jobs)} regression(s), {name} {commits[name].short}", flush=True)
        report = profile_cases(side.python, measured.suite, side_env(side), commits[name], out, pyspy=pyspy,
                               patterns=patterns_for(jobs), only=lambda case: case.key in jobs)
        notes.extend(f"flame graph not recorded: {why}" for why in report.failures)
    return notes


@dataclass
class Site:
    """The evidence site written: each regressed row's links (by row name), and notes on what is missing."""

    links: dict[str, Links] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    tables: dict[str, str] = field(default_factory=dict)  # every measured row: its Compare row, inside the site
    folder: Path | None = None  # where the site was written


def write_verdicts(site: Site, html: str) -> None:
    """The verdict page (AlertReport.verdicts_html: every row in the comment's order) in the site."""
    if site.folder is not None and site.folder.is_dir():
        atomic_write_text(site.folder / VERDICTS, html)


def build_site(measured: Measured, rows: list[Verdict], base: Commit, head: Commit, *, out: Path,
               profile: bool, site_url: str | None) -> Site:
    """Write WORK/site (WORK: where the evidence is kept) with flame graphs of the regressions when
    `profile`; returns the links of each regressed row."""
    written = Site()
    regressed = {(r.benchmark, r.index) for r in rows if r.status == stats.REGRESSED}
    torch = {name: side.torch for name, side in measured.sides.items()}
    if regressed and profile and measured.sides:
        if base.sha == head.sha:  # flame graphs are kept per commit: the two releases' would overwrite
            written.notes.append("flame graphs not recorded: both sides are one commit (an upgrade verdict); "
                                 "`torchbench profile` records each release's from its own output folder")
        else:
            written.notes += _profile(measured, {"base": base, "head": head}, regressed, out)
    found = _result_rows(measured.evidence, base, head, torch)
    head_env = _env_name(torch.get("head", ""))
    site = written.folder = measured.work / "site"
    shutil.rmtree(site, ignore_errors=True)
    compare_pages = publisher.render_pages(
        pages.records(found.rows), site, out_dir=out, revisions={base.sha: 0, head.sha: 1},
        subjects={base.sha: base.subject, head.sha: head.subject}, project=f"alert {base.short}..{head.short}",
        commits={base.sha, head.sha}, evidence=True).compare_pages
    prefix = (site_url.rstrip("/") + "/") if site_url else ""
    by_label = {p.label: p for p in compare_pages}
    specs = {(rr.benchmark, rr.index): rr.task_spec() for rr in found.rows if rr.commit == head.sha}
    for r in rows:
        spec = specs.get((r.benchmark, r.index))
        page = by_label.get(spec.label) if spec else None
        table = f"compare/{page.slug}.html" if page else "index.html"
        if page:
            env = next((e for e in page.envs if e.commit == head.sha and e.env_name == head_env), None)
            if env is not None:
                table += "#" + publisher.row_anchor(env, spec.num_threads, spec.sub_label or spec.stmt)
        if spec:
            written.tables[r.name] = table
        if r.status != stats.REGRESSED:
            continue
        table = prefix + table
        flames = {}
        for side, commit in (("base", base), ("head", head)):
            path = site / "profiles" / commit.sha / r.benchmark / f"{r.index}.svg"
            flames[side] = f"{prefix}profiles/{commit.sha}/{r.benchmark}/{r.index}.svg" if path.exists() else None
        diff = Path("profiles") / "diff" / f"{base.sha[:8]}-{head.sha[:8]}" / r.benchmark / f"{r.index}.html"
        written.links[r.name] = Links(table, flames["base"], flames["head"],
                                      f"{prefix}{diff.as_posix()}" if (site / diff).exists() else None)
    return written
