"""The site's account of the history's steps: our regressions page, its JSON, and asv's Atom feed.

    html/torchbench/regressions.html   every step: commits, size, evidence, confirmation, label, culprit
    html/torchbench/regressions.json   the same, as data (schema: torchbench/schemas/regressions.schema.json)
    html/regressions.xml               asv's feed, rewritten with the *confirmed* regressions only

Steps are detected afresh on every publish (changepoints.detect, on the
per-commit values the Compare pages hold), and joined with what
`torchbench find` recorded (OUT/changepoints.json): its confirmations by
interleaved re-measurement, instruction-count labels, culprits and flame
graphs. Only a confirmed step is *reported* (the feed, the headline); the
others are listed for what they are: unconfirmed candidates, or refuted.

The feed keeps asv's file name, feed id (asv.feed's id from the same author,
title and address) and entry id scheme (the series and the two commits), so a
reader subscribed to asv's regressions.xml keeps working. It is written with
asv.feed itself.
"""

from __future__ import annotations

import datetime
import json
import math
from pathlib import Path
from typing import Iterator

from asv import feed
from torchbench_core.storage import atomic_write_text

from ..errors import UserError
from ..history import changepoints
from . import forked, pages
from ..history.step_record import CONFIRMED, REFUTED, UNCONFIRMED, read_record, record_key

__all__ = ["SCHEMA", "FEED", "anchor", "histories_of", "collect", "row_title", "rewrite_feed", "write"]

SCHEMA = "torchbench.regressions/1"
FEED = "regressions.xml"  # asv's name, in html_dir
ORDER = {CONFIRMED: 0, UNCONFIRMED: 1, "inconclusive": 2, REFUTED: 3}


def histories_of(series_pages: list[pages.SeriesPage], revisions: dict[str, int]
                 ) -> tuple[Iterator[changepoints.History], dict[tuple[str, int], str]]:
    """Every series of the pages along the branch (commits off it are not part of a history), made one at
    a time as they are searched, and the slug of the page each (benchmark, index) is on. A page's series is
    already in history order per machine and environment: a history is its points of one benchmark row on
    the branch."""
    series_of = {}
    for page in series_pages:
        for s in page.series:
            for benchmark, index in dict.fromkeys(zip(s.cells.benchmark[s.at].tolist(), s.cells.index[s.at].tolist())):
                series_of.setdefault((s.cells.benchmarks[benchmark], index), page.slug)

    def histories() -> Iterator[changepoints.History]:
        for page in series_pages:
            for s in page.series:
                title = row_title(page.label, s.name, s.column)
                c, envs = s.cells, s.envs()
                by_row: dict[tuple[int, int], list[int]] = {}  # (benchmark, index) -> points on the branch
                for k, (env, b, i) in enumerate(zip(envs, c.benchmark[s.at].tolist(), c.index[s.at].tolist())):
                    if env.commit in revisions:
                        by_row.setdefault((b, i), []).append(k)
                for (b, index), ks in by_row.items():
                    intervals = c.intervals[s.at[ks]]  # the columns, not an Interval a commit
                    env = envs[ks[0]]
                    yield changepoints.History(env.machine, env.env_name, c.benchmarks[b], index, title, page.unit_kind,
                                               [envs[k].commit for k in ks], intervals[:, 4].tolist(), intervals)
    return histories(), series_of


def row_title(*parts: str | None) -> str:
    """A step's row as the pages place it (label · sub-label · column), each part once: a plain asv row
    without parameters is its own label and sub-label, and was named twice."""
    return " · ".join(dict.fromkeys(x for x in parts if x))


def collect(series_pages: list[pages.SeriesPage], revisions: dict[str, int], out_dir: Path,
            warnings: list[str], windows: changepoints.Windows | None = None) -> list[dict]:
    """The steps to show: detected now, joined with find's record (whose confirmed steps stay listed)."""
    try:
        record = read_record(out_dir)
    except UserError as e:  # it names the file: the page says so, and shows fresh detections
        warnings.append(str(e))
        record = {}
    histories, series_of = histories_of(series_pages, revisions)
    steps = {}
    for f in changepoints.find_steps(histories, windows=windows, each=forked.map_forked):
        entry = f.to_dict()
        steps[record_key(entry)] = {**entry, "status": UNCONFIRMED, "confirmation": None, "culprit": None}
    for key, entry in record.items():
        if key in steps or entry.get("status") == CONFIRMED:
            steps[key] = {**steps.get(key, {}), **entry, "name": steps.get(key, entry)["name"]}
    subjects = {e.commit: e.subject for page in series_pages for e in page.envs}
    shown = []
    for s in steps.values():
        s["series"] = series_of.get((s["benchmark"], s["index"]))
        s["subject_before"], s["subject_after"] = subjects.get(s["before"], ""), subjects.get(s["after"], "")
        shown.append(s)
    # confirmed first, regressions before improvements, the biggest first
    return sorted(shown, key=lambda s: (ORDER.get(s["status"], 9), s["ratio"] < 1, -abs(math.log(s["ratio"])),
                                        s["key"]))


def percent(ratio: float) -> str:
    """A ratio as a signed change: 1.05 -> '+5.0%'."""
    return f"{(ratio - 1) * 100:+.1f}%"


def write(steps: list[dict], *, html_dir: Path, site: Path, env, project: str, show_commit_url: str = "") -> None:
    """regressions.html and .json in SITE (our folder), and asv's feed in HTML_DIR."""
    text = env.get_template("regressions.html.j2").render(steps=steps, project=project, root="",
                                                          percent=percent, commit_url=show_commit_url)
    atomic_write_text(site / "regressions.html", text)
    doc = {"schema": SCHEMA, "project": project, "steps": steps}
    atomic_write_text(site / "regressions.json", json.dumps(doc, indent=1, allow_nan=False) + "\n")
    _write_feed(steps, html_dir / FEED, project)


def rewrite_feed(html_dir: Path, site: Path) -> None:
    """asv's feed (HTML_DIR's regressions.xml) again from our regressions.json in SITE: inside `asv publish`
    our pages are written during asv's first pass (publisher._sharing), and asv's own Regressions
    publisher writes its feed over ours after that."""
    doc = json.loads((site / "regressions.json").read_text())
    _write_feed(doc["steps"], html_dir / FEED, doc["project"])


def _write_feed(steps: list[dict], dest: Path, project: str) -> None:
    entries = []
    now = datetime.datetime.now(datetime.timezone.utc)
    for s in steps:
        if s["status"] != CONFIRMED or s["ratio"] <= 1:
            continue
        confirmed = (s.get("confirmation") or {})
        when = s.get("confirmed_at")
        updated = datetime.datetime.fromisoformat(when) if when else now
        culprit = s.get("culprit") or {}
        where = (f"in commit {culprit['culprit'][:8]} ({culprit.get('subject', '')})" if culprit.get("culprit")
                 else f"in commits {s['before'][:8]}..{s['after'][:8]}")
        measured = (f" Re-measured in alternating processes: {percent(confirmed['ratio'])}"
                    f" ({confirmed.get('label') or 'no label'})." if confirmed.get("ratio") else "")
        summary = f"{percent(s['ratio'])} regression {where} on {s['env_name']}.{measured}"
        link = f"torchbench/regressions.html#{anchor(s)}"
        entries.append(feed.FeedEntry(f"{percent(s['ratio'])} {s['name']}", updated, link, summary,
                                      [s["key"], s["before"], s["after"]], updated))
    entries.sort(key=lambda e: e.updated, reverse=True)
    tmp = dest.with_name(f".{dest.name}.tmp")
    # asv.feed writes the file itself; write beside it and rename, as everywhere else
    feed.write_atom(str(tmp), entries, author="Airspeed Velocity", title=f"{project} performance regressions",
                    address=f"{project}.asv")
    tmp.replace(dest)


def anchor(step: dict) -> str:
    return pages.slug(record_key(step))
