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
from dataclasses import dataclass
from pathlib import Path

from .. import pages, profile, publisher, stats
from ..commits import Commit
from ..results import ResultSet, Row as ResultRow, param_value
from . import measure
from .decide import Row

__all__ = ["Links", "build_site", "ENV_NAME", "MACHINE"]

MACHINE = "alert"
ENV_NAME = "alternating-processes"


@dataclass(frozen=True)
class Links:
    table: str
    base: str | None = None  # flame graphs: base, head, differential
    head: str | None = None
    diff: str | None = None


def _result_rows(evidence: measure.Evidence, base: Commit, head: Commit) -> ResultSet:
    """Each side's per-process values as one row per benchmark: the samples of a Compare cell."""
    found = ResultSet()
    for side, commit in (("base", base), ("head", head)):
        for (name, index), values in evidence.values[side].items():
            info = evidence.jobs[(name, index)]
            names = info.get("param_names") or [f"param{i + 1}" for i in range(len(info["params"]))]
            found.rows.append(ResultRow(
                machine=MACHINE, commit=commit.sha, env_name=ENV_NAME, benchmark=name, index=index,
                params=tuple((n, param_value(v)) for n, v in zip(names, info["params"])),
                value=stats.process_summary(values), samples=tuple(values), number=1, stats=None,
                unit=info.get("unit"), date=None))
    return found


def _profile(python: Path, suite: Path, sides: dict[str, measure.Side], commits: dict[str, Commit],
             jobs: set[tuple[str, int]], out: Path, notes: list[str]) -> None:
    pyspy = shutil.which("py-spy")
    if pyspy is None:
        notes.append("flame graphs not recorded: py-spy is not installed")
        return
    for name, side in sides.items():
        print(f"== flame graphs of {len(jobs)} regression(s), {name} {commits[name].short}", flush=True)
        report = profile.profile_cases(python, suite, measure.side_env(side), commits[name], out, pyspy=pyspy,
                                       patterns=profile.patterns_for(jobs), only=lambda case: case.key in jobs)
        notes.extend(f"flame graph not recorded: {why}" for why in report.failures)


def build_site(evidence: measure.Evidence, rows: list[Row], base: Commit, head: Commit, *, out: Path, work: Path,
               python: Path | None, suite: Path | None, sides: dict[str, measure.Side] | None,
               site_url: str | None, notes: list[str]) -> dict[str, Links]:
    """Write WORK/site and return the links of each regressed row (by row name)."""
    regressed = {(r.benchmark, r.index) for r in rows if r.status == stats.REGRESSED}
    if regressed and python is not None and sides:
        _profile(python, suite, sides, {"base": base, "head": head}, regressed, out, notes)
    found = _result_rows(evidence, base, head)
    site = work / "site"
    shutil.rmtree(site, ignore_errors=True)
    compare_pages, _ = publisher.render_pages(
        pages.records(found.rows), site, out_dir=out, revisions={base.sha: 0, head.sha: 1},
        subjects={base.sha: base.subject, head.sha: head.subject}, project=f"alert {base.short}..{head.short}",
        commits={base.sha, head.sha})
    prefix = (site_url.rstrip("/") + "/") if site_url else ""
    by_label = {p.label: p for p in compare_pages}
    specs = {(rr.benchmark, rr.index): rr.task_spec() for rr in found.rows if rr.commit == head.sha}
    links = {}
    for r in rows:
        if r.status != stats.REGRESSED:
            continue
        spec = specs.get((r.benchmark, r.index))
        page = by_label.get(spec.label) if spec else None
        table = f"{prefix}compare/{page.slug}.html" if page else f"{prefix}index.html"
        if page:
            env = next((e for e in page.envs if e.commit == head.sha), None)
            if env is not None:
                table += "#" + publisher.row_anchor(env, spec.num_threads, spec.sub_label or spec.stmt)
        flames = {}
        for side, commit in (("base", base), ("head", head)):
            path = site / "profiles" / commit.sha / r.benchmark / f"{r.index}.svg"
            flames[side] = f"{prefix}profiles/{commit.sha}/{r.benchmark}/{r.index}.svg" if path.exists() else None
        diff = Path("profiles") / "diff" / f"{base.sha[:8]}-{head.sha[:8]}" / r.benchmark / f"{r.index}.html"
        links[r.name] = Links(table, flames["base"], flames["head"],
                              f"{prefix}{diff.as_posix()}" if (site / diff).exists() else None)
    return links
