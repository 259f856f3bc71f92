"""The alert's report: a Markdown comment for the pull request, the same as JSON, and the exit status.

The comment is rendered by jinja2 (html_templates/alert_comment.md.j2) with
autoescape on; names, parameters and commit subjects also get their Markdown
specials escaped, so a benchmark called `<img onerror=...>|x` stays text.
It starts with a hidden marker by which the GitHub workflow finds the
comment to update.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import urllib.parse
from dataclasses import asdict, dataclass, field

from markupsafe import Markup

from torchbench_core.units import select_unit

from .. import resources, stats
from ..ab.options import Policy
from ..ab.channels import CHANNELS
from ..ab.evidence import wall_test_of
from ..ab.verdict import COUNTS, FAILED, NEW, REMOVED, SKIPPED, Verdict
from ..errors import EXIT_FAILURE, EXIT_OK, EXIT_REGRESSION
from ..project.commits import Commit
from .github import MARKER

__all__ = ["MARKER", "OUTCOMES", "AlertReport", "undecided_order"]

ORDER = [stats.REGRESSED, stats.IMPROVED, stats.UNCHANGED, stats.INCONCLUSIVE, NEW, FAILED, REMOVED, SKIPPED]
# A skipped row (one this machine cannot run, or asv's skip: Verdict.error says which) is listed and decides
# nothing: it fails neither the verdict nor the exit status
# What an alert concluded, for machines (the JSON's `outcome`) and its exit status:
REGRESSION = "regression"  # a row regressed: exit 1
NO_REGRESSION = "no_regression"  # every compared row decided (unchanged, improved, or below the floor): exit 0
UNDECIDED = "undecided"  # no regression found, but rows could not be decided (or none was compared, all skipped):
# Policy.undecided_exit (0)
FAILED_OUTCOME = "failed"  # could not compare, or a benchmark failed: exit 2
OUTCOMES = (REGRESSION, NO_REGRESSION, UNDECIDED, FAILED_OUTCOME)
SUSPECTS_WITHOUT_EVIDENCE = 3  # where no undecided row's interval excludes 1: the smallest p-values shown first
UNFOLDED = 10  # undecided rows listed before the rest fold into <details>
EFFECT = 0.05  # the change the "what it would take" line is about
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def md(text) -> Markup:
    """Text for a Markdown table cell: one line, HTML's <, > and & as entities (GitHub renders
    HTML in comments), Markdown's emphasis, code, link and table characters backslashed, and every @
    followed by a zero-width space, so a commit subject's `@name` or `@org/team` notifies nobody (as
    Dependabot writes mentions it quotes)."""
    flat = " ".join(str(text).split())
    html = flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return Markup(_MD_SPECIAL.sub(r"\\\1", html).replace("@", "@&#8203;"))


def _mde_text(r: Verdict) -> str:
    """The wall-time MDE of a row, or why it has none: a row its instruction counts decided left the rounds
    as soon as its wall time could disagree (4 processes a side), so a wall-time bar says nothing of it."""
    c = r.comparison
    if c is None:
        return "—"
    if r.decided_by in CHANNELS:
        return f"— (decided by {r.decided_by})"
    if math.isfinite(c.mde) and math.isfinite(c.relabelled_mde):
        return f"{c.mde:.1%} (slow processes; {c.relabelled_mde:.1%} without them)"
    if math.isfinite(c.mde):
        return f"{c.mde:.1%}"
    if c.power_ceiling < 1.0:  # the slow processes, not the bar, are what no change can get past
        return (f"∞ (this machine's slow processes cap the power at {c.power_ceiling:.0%} with "
                f"{min(c.n_base, c.n_head)} a side)")
    return "∞ (too few processes for the bar)"


def _time(value: float | None, unit: str | None) -> str:
    if value is None:
        return "—"
    if unit in (None, "seconds"):
        name, scale = select_unit(value)
        return f"{value / scale:.3g} {name}"
    return f"{value:.4g} {unit}"


@dataclass
class AlertReport:
    base: Commit
    head: Commit
    rows: list[Verdict]
    policy: Policy
    rounds: int
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # builds that failed, tool failures
    # per regressed row name: its Compare row and flame graphs (evidence_site.py), as URLs when the
    # site is served (site_url), else as paths inside the site folder
    links: dict[str, dict] = field(default_factory=dict)
    site_url: str | None = None
    time_spent: dict = field(default_factory=dict)  # Evidence.time_spent(): phases, rounds per minute, ...
    torch: dict = field(default_factory=dict)  # the upgrade verdict: each side's torch release (else empty)

    def counts(self) -> dict[str, int]:
        out = {status: 0 for status in ORDER}
        for r in self.rows:
            out[r.status] += 1
        return out

    def outcome(self) -> str:
        """One of OUTCOMES: a failure outranks a regression, which outranks rows left undecided."""
        counts = self.counts()
        if self.problems or counts[FAILED]:
            return FAILED_OUTCOME
        if counts[stats.REGRESSED]:
            return REGRESSION
        nothing_compared = counts[SKIPPED] and not self.compared()  # a suite this machine cannot run at all
        return UNDECIDED if counts[stats.INCONCLUSIVE] or nothing_compared else NO_REGRESSION

    def exit_status(self) -> int:
        return {FAILED_OUTCOME: EXIT_FAILURE, REGRESSION: EXIT_REGRESSION, NO_REGRESSION: EXIT_OK,
                UNDECIDED: self.policy.undecided_exit}[self.outcome()]

    def compared(self) -> int:
        return sum(1 for r in self.rows if r.comparison is not None)

    def headline(self) -> str:
        counts, outcome = self.counts(), self.outcome()
        if self.problems:
            return "⚠️ could not compare: " + "; ".join(self.problems)
        if outcome == FAILED_OUTCOME:
            failed = f"⚠️ {counts[FAILED]} benchmark(s) failed"
            return f"❌ {counts[stats.REGRESSED]} regression(s), and {failed}" if counts[stats.REGRESSED] else failed
        if outcome == REGRESSION:
            return f"❌ {counts[stats.REGRESSED]} regression(s)"
        skipped = f"; {counts[SKIPPED]} skipped" if counts[SKIPPED] else ""
        if outcome == UNDECIDED and not counts[stats.INCONCLUSIVE]:
            return f"⚠️ nothing compared: all {counts[SKIPPED]} row(s) skipped"
        if outcome == UNDECIDED:
            mdes = [r.comparison.mde for r in self.rows if r.status == stats.INCONCLUSIVE and r.comparison]
            finite = [m for m in mdes if math.isfinite(m)]
            mde = f"median MDE {statistics.median(finite):.0%}" if finite else "noise not measurable"
            return (f"⚠️ no regression found; {counts[stats.INCONCLUSIVE]} of {self.compared()} rows undecided "
                    f"({mde}){skipped}")
        if not self.compared():  # every row new or removed: nothing weighed, nothing to call decided
            parts = [f"{counts[k]} {k}" for k in (NEW, REMOVED) if counts[k]]
            return f"➖ nothing compared: no row measured on both sides ({', '.join(parts) or 'no rows'}){skipped}"
        return f"✅ no regression: all {self.compared()} compared rows decided{skipped}"

    def rounds_text(self) -> str:
        """How the rounds ran their two processes (Rounds.schedule), as every view of the report says it."""
        spent = self.time_spent or {}
        designs, schedule = spent.get("designs") or {}, spent.get("schedule")
        if len(designs) > 1:  # Rounds.schedule "auto": both designs tried first (ab/design_choice.py)
            tried = f"{designs.get('alternating', 0)} alternating, {designs.get('duet', 0)} duets"
            if schedule not in ("alternating", "duet"):
                return f"{self.rounds} rounds ({tried}, interleaved: the run ended before a design was chosen)"
            choice = spent.get("design_choice") or {}
            test = wall_test_of(choice, schedule)
            then = (f"{'duets' if schedule == 'duet' else 'alternating'}, decided by the {test} test"
                    + (" where it reaches the bar" if test == "paired" else ""))
            figures = choice.get("figures", {})
            mde = ", ".join(f"{d} {f['mde']:.1%}" for d, f in figures.items())
            return (f"{self.rounds} rounds ({tried}: both designs tried first, then {then}"
                    + (f"; projected median MDE {mde}, the figures in the notes" if mde else "") + ")")
        if schedule == "duet":
            return (f"{self.rounds} rounds of duets ({2 * self.rounds} processes, base and head at once on a core "
                    "each; the paired test decides where it reaches the bar)")
        return f"{self.rounds} rounds of alternating processes ({2 * self.rounds} processes)"

    def what_it_would_take(self) -> dict | None:
        """For the undecided rows: the rounds (and minutes, at this run's rate) at which their minimum
        detectable effect comes down to EFFECT (stats.processes_to_detect: the MDE's own computation).
        Half of them (the median row) and all of them (the slowest)."""
        more = []
        for r in self.rows:
            if r.status == stats.INCONCLUSIVE and r.comparison:
                needed = stats.processes_to_detect(r.comparison, EFFECT)
                if needed is not None:
                    more.append(max(0, needed - min(r.comparison.n_base, r.comparison.n_head)))
        if not more:
            return None
        more.sort()
        rate = (self.time_spent or {}).get("rounds_per_minute")
        half, all_ = more[(len(more) - 1) // 2], more[-1]
        undecided = sum(r.status == stats.INCONCLUSIVE for r in self.rows)
        return {"effect": EFFECT, "rows": len(more), "undecided": undecided, "half_rounds": half, "all_rounds": all_,
                "half_minutes": half / rate if rate else None, "all_minutes": all_ / rate if rate else None,
                "rounds_per_minute": rate}

    def sections(self) -> list[tuple[str, list[Verdict]]]:
        """The rows in the order every view of the report shows them (the comment, the terminal, the evidence
        site's verdict page): regressed, improved, failed, the suspects, the other undecided by p-value, then
        unchanged, new, removed and skipped."""
        suspects, rest = undecided_order(self.rows)
        by = {s: [r for r in self.rows if r.status == s] for s in ORDER}
        suspects_title = ("suspects: their interval excludes no change, not significant at the suite's false "
                          "discovery rate" if _with_evidence(suspects) else "undecided, closest to significance")
        return [(title, found) for title, found in [
            ("regressed", by[stats.REGRESSED]), ("improved", by[stats.IMPROVED]), ("failed", by[FAILED]),
            (suspects_title, suspects), ("undecided, by p-value", rest), ("unchanged", by[stats.UNCHANGED]),
            ("new", by[NEW]), ("removed", by[REMOVED]), ("skipped", by[SKIPPED])] if found]

    def _cells(self, r: Verdict) -> dict:
        c = r.comparison
        return {
            "name": r.title, "label": "; ".join(filter(None, (r.label, r.unconfirmed))), "status": r.status,
            "error": r.error,
            "mark": {stats.REGRESSED: "🔴", stats.IMPROVED: "🟢"}.get(r.status, ""),
            "base_text": _time(r.base, r.unit), "head_text": _time(r.head, r.unit),
            "ratio_text": f"{c.ratio:.3f}" if c else "—",
            "ci_text": f"{c.ci_low:.3f}–{c.ci_high:.3f}" if c else "—",
            "counts_text": r.channels_text or (f"{r.counts_delta:+.2%}" if r.counts_delta is not None else "—"),
            "n_text": f"{c.n_base}/{c.n_head}" if c else "—",
            "mde_text": _mde_text(r),
            "p_text": f"{c.p_value:.2g}" if c else "—",
        }

    def _evidence(self) -> list[dict]:
        """Per regression: where to look (Compare row, base/head/differential flame graphs)."""
        out = []
        for r in self.rows:
            links = self.links.get(r.name)
            if r.status == stats.REGRESSED and links:
                out.append({"name": r.title, **{k: links.get(k) for k in ("table", "base", "head", "diff")}})
        return out

    def markdown(self) -> str:
        env = resources.jinja_environment(keep_trailing_newline=True, filters={
            "md": md, "urlpath": lambda url: Markup(urllib.parse.quote(url, safe=":/#?=&%-._~")),
            "codepath": lambda path: Markup(str(path).replace("`", "'"))})  # code spans show < > as is
        cells = [self._cells(r) for r in self.rows]
        by = {s: [c for c in cells if c["status"] == s] for s in ORDER}
        suspects, rest = undecided_order(self.rows)
        undecided = [self._cells(r) for r in suspects + rest]
        text = env.get_template("alert_comment.md.j2").render(
            marker=MARKER, headline=self.headline(), counts=self.counts(), policy=self.policy,
            counted=any(r.counts_delta is not None for r in self.rows),
            base=self.base, head=self.head, rounds_text=self.rounds_text(),
            compared=self.compared(),
            changed=by[stats.REGRESSED] + by[stats.IMPROVED], failed=by[FAILED], skipped=by[SKIPPED],
            suspects=undecided[:len(suspects)], undecided=undecided[len(suspects):], unfolded=UNFOLDED,
            suspects_significant=_with_evidence(suspects),
            take=self.what_it_would_take(), outcome=self.outcome(), exit_status=self.exit_status(),
            mde_rows=[c for c in cells if c["mde_text"] != "—"],
            notes=self.notes + self.problems, evidence=self._evidence(), site_url=(self.site_url or "").rstrip("/"),
            time=self.time_spent, by_counts=sum(1 for r in self.rows if r.decided_by == COUNTS), torch=self.torch,
            base_counts_from=((self.time_spent or {}).get("instruction_counts") or {}).get("base", {}).get("cached_by"),
            by_other=[(name, n) for name in CHANNELS if name != COUNTS
                      if (n := sum(1 for r in self.rows if r.decided_by == name))])
        return re.sub(r"\n{3,}", "\n\n", text)

    def verdicts_html(self, tables: dict[str, str]) -> str:
        """The evidence site's verdict page: every row in `sections` order, each linked to its Compare row
        (`tables`: row name -> its place in the site)."""
        env = resources.jinja_environment(trim_blocks=True, lstrip_blocks=True)
        sections = [(title, [{**self._cells(r), "table": tables.get(r.name)} for r in rows])
                    for title, rows in self.sections()]
        return env.get_template("alert_verdicts.html.j2").render(
            root="", headline=self.headline(), base=self.base, head=self.head, rounds_text=self.rounds_text(),
            outcome=self.outcome(), exit_status=self.exit_status(), take=self.what_it_would_take(),
            sections=sections, policy=self.policy, evidence=True)

    def to_dict(self) -> dict:
        return {"schema": "torchbench.alert/1", "verdict": self.headline(), "outcome": self.outcome(),
                "exit_status": self.exit_status(),
                "base": {"sha": self.base.sha, "subject": self.base.subject},
                "head": {"sha": self.head.sha, "subject": self.head.subject},
                "policy": asdict(self.policy), "rounds": self.rounds, "counts": self.counts(),
                "rows": [r.to_dict() for r in self.rows], "notes": self.notes, "problems": self.problems,
                "links": self.links, "site_url": self.site_url, "time_spent": self.time_spent,
                **({"torch": self.torch} if self.torch else {})}

    @classmethod
    def from_dict(cls, doc: dict) -> "AlertReport":
        """A report as `json()` wrote it (for re-rendering a recorded report)."""
        if doc.get("schema") != "torchbench.alert/1":
            raise ValueError(f"not a torchbench alert report (schema {doc.get('schema')!r})")
        rows = []
        for r in doc["rows"]:
            r = {k: v for k, v in r.items() if k != "title"}
            c = r.pop("comparison")
            if c is not None:
                c = stats.Comparison(**{k: math.inf if v is None else v for k, v in c.items()})
            rows.append(Verdict(**r, comparison=c))
        return cls(Commit(doc["base"]["sha"], doc["base"]["subject"]), Commit(doc["head"]["sha"], doc["head"]["subject"]),
                   rows, Policy(**doc["policy"]), doc["rounds"], doc["notes"], doc["problems"],
                   doc.get("links", {}), doc.get("site_url"), doc.get("time_spent", {}), doc.get("torch", {}))

    def json(self) -> str:
        return json.dumps(_finite(self.to_dict()), indent=1, allow_nan=False)


def _excludes_one(c: stats.Comparison | None) -> bool:
    return c is not None and (c.ci_low > 1 or c.ci_high < 1)


def _with_evidence(suspects: list[Verdict]) -> bool:
    """Whether undecided_order's suspects are those whose interval excludes no change (else: the smallest
    p-values)."""
    return bool(suspects) and _excludes_one(suspects[0].comparison)


def undecided_order(rows: list[Verdict]) -> tuple[list[Verdict], list[Verdict]]:
    """The undecided rows as (suspects, the rest), each by p-value. Suspects: those whose interval excludes
    no change (not significant at the suite's false discovery rate); where none does, the
    SUSPECTS_WITHOUT_EVIDENCE smallest p-values."""
    undecided = sorted((r for r in rows if r.status == stats.INCONCLUSIVE),
                       key=lambda r: (r.comparison.p_value if r.comparison else math.inf, r.name))
    suspects = [r for r in undecided if _excludes_one(r.comparison)]
    if not suspects:
        suspects = [r for r in undecided if r.comparison][:SUSPECTS_WITHOUT_EVIDENCE]
    chosen = {id(r) for r in suspects}
    return suspects, [r for r in undecided if id(r) not in chosen]


def _finite(value):
    """JSON has no infinity: an unbounded interval or effect is written as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
