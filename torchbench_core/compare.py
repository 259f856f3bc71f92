"""Compare: many Measurements as grouped text tables (torch.utils.benchmark's layout).

One table per label; a row per (num_threads, env, sub_label or stmt); a column
per description; rows blocked by thread count and prefixed with "(env)" when a
table holds more than one env. Beyond torch: `env=None` mixes with named envs
(torch 2.13 raises TypeError), sub-nanosecond times get "ps", and
`relative_to(env)` shows every cell as a ratio to a baseline env (A/B tables).

`tables()` gives the same layout as data (TableView), for renderers other
than text: the tracker's HTML pages lay out their tables with it, so a page
and the printed table cannot disagree.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Iterable, Sequence

from .measurement import Measurement
from .units import ordered_unique, select_unit, trim_sigfig, unit_to_english

__all__ = ["CellView", "Colorize", "Compare", "RowView", "TableView"]

BEST = "\033[92m"
GOOD = "\033[34m"
BAD = "\033[2m\033[91m"
VERY_BAD = "\033[31m"
BOLD = "\033[1m"
TERMINATE = "\033[0m"

UNSPECIFIED_ENV = "Unspecified env"
_WARNING_LEGEND = "(! XX%) Measurement has high variance, where XX is the IQR / median * 100."


class Colorize(enum.Enum):
    NONE = "none"
    COLUMNWISE = "columnwise"
    ROWWISE = "rowwise"


def _env_name(m: Measurement) -> str:
    return UNSPECIFIED_ENV if m.env is None else m.env


def _env_sort_key(env: str | None) -> tuple[bool, str]:
    # Unnamed env first, then alphabetical (torch sorts alphabetically and
    # raises TypeError when None meets a str).
    return (env is not None, env or "")


def _leading_digits(value: float) -> int:
    return math.ceil(math.log10(value)) if value > 0 else 1


def _color(segment: str, value: float, best: float, absolute_slack: float) -> str:
    if value <= best * 1.01 or value <= best + absolute_slack:
        return BEST + BOLD + segment + TERMINATE * 2
    if value <= best * 1.1:
        return GOOD + BOLD + segment + TERMINATE * 2
    if value >= best * 5:
        return VERY_BAD + BOLD + segment + TERMINATE * 2
    if value >= best * 2:
        return BAD + segment + TERMINATE * 2
    return segment


@dataclass(frozen=True)
class CellView:
    text: str  # as the text table prints it, without padding
    value: float  # in the table's unit (or a ratio, for relative tables)
    measurement: Measurement


@dataclass(frozen=True)
class RowView:
    num_threads: int
    env: str | None
    name: str  # sub_label, or the statement
    cells: tuple[CellView | None, ...]  # one per column


@dataclass(frozen=True)
class TableView:
    label: str | None
    columns: tuple[str | None, ...]  # descriptions
    rows: tuple[RowView, ...]  # in the text table's order: blocked by num_threads, then env
    unit: str  # "" for relative tables
    footer: str


class _Column:
    """Number format for one description column, shared by all its cells."""

    def __init__(
        self, cells: Sequence[tuple[float, Measurement]], trim: bool, highlight: bool, relative: bool
    ) -> None:
        self._trim = trim and not relative
        self._highlight = highlight and any(m.has_warnings for _, m in cells)
        digits = [_leading_digits(v) for v, _ in cells]
        if relative:
            decimals = 2
        elif self._trim:
            decimals = min(max(m.significant_figures - d, 0) for d, (_, m) in zip(digits, cells))
        else:
            decimals = 1
        length = max(digits) + decimals + (1 if decimals else 0)
        self._template = f"{{:>{length}.{decimals}f}}{{:>{7 if self._highlight else 0}}}"

    def format(self, value: float | None, m: Measurement | None) -> str:
        if value is None or m is None:
            return " " * len(self._template.format(1, ""))
        if self._trim:
            value = trim_sigfig(value, m.significant_figures)
        spread = m.iqr / m.median if (self._highlight and m.has_warnings) else None
        return self._template.format(value, f" (! {spread * 100:.0f}%)" if spread is not None else "")


class _Table:
    """One label's table."""

    def __init__(
        self,
        results: list[Measurement],
        colorize: Colorize,
        trim: bool,
        highlight: bool,
        baseline_env: str | None,
        relative: bool,
        count_unit: str | None = None,
    ) -> None:
        self.label = results[0].label
        self.count_unit = count_unit
        self.results = results
        self.colorize = colorize
        self.highlight = highlight
        self.relative = relative

        self.row_keys = ordered_unique((m.num_threads, m.env, m.as_row_name) for m in results)
        self.row_keys.sort(key=lambda k: (k[0], _env_sort_key(k[1])))
        self.column_keys = ordered_unique(m.description for m in results)
        row_at = {k: i for i, k in enumerate(self.row_keys)}
        col_at = {k: j for j, k in enumerate(self.column_keys)}
        self.grid: list[list[Measurement | None]] = [[None] * len(self.column_keys) for _ in self.row_keys]
        for m in results:
            self.grid[row_at[(m.num_threads, m.env, m.as_row_name)]][col_at[m.description]] = m

        if relative:
            baselines = {
                (m.num_threads, m.as_row_name, m.description): m.median
                for m in results
                if m.env == baseline_env
            }
            self.unit, self.scale = "", 1.0

            def value(m: Measurement | None) -> float | None:
                if m is None:
                    return None
                base = baselines.get((m.num_threads, m.as_row_name, m.description))
                return None if not base else m.median / base

        else:
            if count_unit:
                self.unit, self.scale = count_unit, 1.0
            else:
                self.unit, self.scale = select_unit(min(m.median for m in results))

            def value(m: Measurement | None) -> float | None:
                return None if m is None else m.median / self.scale

        self.values = [[value(m) for m in row] for row in self.grid]
        self.columns = [
            _Column(
                [(values[j], row[j]) for values, row in zip(self.values, self.grid) if values[j] is not None],
                trim,
                highlight,
                relative,
            )
            for j in range(len(self.column_keys))
        ]

    def _first_cells(self) -> list[str]:
        envs = {_env_name(m) for m in self.results}
        render_env = len(envs) > 1
        env_width = max(len(e) for e in envs) + 4 if render_env else 4
        cells, prior = [], (None, object())
        for (threads, env, name), row in zip(self.row_keys, self.grid):
            concrete = next(m for m in row if m is not None)
            new_env = prior[0] != threads or prior[1] != env
            tag = f"({_env_name(concrete)})" if render_env and new_env else ""
            cells.append("  " + tag.ljust(env_width) + name)
            prior = (threads, env)
        return cells

    def _best_values(self, i: int) -> list[float | None]:
        """Per column, the value each cell of row i is coloured against."""
        row = [v for v in self.values[i] if v is not None]
        if self.colorize is Colorize.ROWWISE:
            return [min(row) if row else None] * len(self.column_keys)
        threads = self.row_keys[i][0]
        group = [r for r, key in enumerate(self.row_keys) if key[0] == threads]
        best = []
        for j in range(len(self.column_keys)):
            column = [self.values[r][j] for r in group if self.values[r][j] is not None]
            best.append(min(column) if column else None)
        return best

    def footer(self) -> str:
        if self.relative:
            return "Values are ratios of medians to the baseline env's (lower is faster)."
        if self.count_unit:
            return f"Values are {self.count_unit} per run (median)."
        return f"Times are in {unit_to_english(self.unit)}s ({self.unit})."

    def view(self) -> TableView:
        rows = []
        for (threads, env, name), values, grid_row in zip(self.row_keys, self.values, self.grid):
            cells = tuple(
                None if v is None or m is None else CellView(col.format(v, m).strip(), v, m)
                for col, v, m in zip(self.columns, values, grid_row)
            )
            rows.append(RowView(threads, env, name, cells))
        return TableView(self.label, tuple(self.column_keys), tuple(rows), self.unit, self.footer())

    def render(self) -> str:
        header = [""] + ["" if k is None else str(k) for k in self.column_keys]
        rows = [
            [first] + [col.format(v, m) for col, v, m in zip(self.columns, values, grid_row)]
            for first, values, grid_row in zip(self._first_cells(), self.values, self.grid)
        ]
        widths = [max(len(r[j]) for r in [header, *rows]) for j in range(len(header))]
        lines = ["  |  ".join(h.center(w) for h, w in zip(header, widths))]
        total_width = len(lines[0])
        prior_threads = None
        # Colour slack: torch treats cells within 100 ns of the best as best.
        slack = 0.0 if (self.relative or self.count_unit) else 100e-9 / self.scale
        for i, row in enumerate(rows):
            threads = self.row_keys[i][0]
            if threads != prior_threads:
                lines.append(f"{threads} threads: ".ljust(total_width, "-"))
                prior_threads = threads
            cells = [row[0].ljust(widths[0])]
            best = self._best_values(i) if self.colorize is not Colorize.NONE else []
            for j, (cell, width) in enumerate(zip(row[1:], widths[1:])):
                cell = cell.center(width)
                value = self.values[i][j]
                if best and value is not None and best[j] is not None:
                    cell = _color(cell, value, best[j], slack)
                cells.append(cell)
            lines.append("  |  ".join(cells))

        title = f"[{(' ' + (self.label or '') + ' ').center(total_width - 2, '-')}]"
        footer = self.footer()
        legend = ""
        if self.highlight and any(m.has_warnings for m in self.results):
            legend = _WARNING_LEGEND + "\n"
        return "\n".join([title, *lines, "", footer]) + "\n" + legend


class Compare:
    """Formatted tables of many Measurements; see the module docstring."""

    def __init__(self, results: Iterable[Measurement]) -> None:
        self._results: list[Measurement] = []
        self.extend_results(results)
        self._trim_significant_figures = False
        self._colorize = Colorize.NONE
        self._highlight_warnings = False
        self._baseline_env: str | None = None
        self._relative = False
        self._count_unit: str | None = None

    def extend_results(self, results: Iterable[Measurement]) -> None:
        results = [Measurement.from_torch(r) for r in results]
        for r in results:
            if not isinstance(r, Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} instead.")
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        self._trim_significant_figures = True

    def colorize(self, rowwise: bool = False) -> None:
        self._colorize = Colorize.ROWWISE if rowwise else Colorize.COLUMNWISE

    def highlight_warnings(self) -> None:
        self._highlight_warnings = True

    def relative_to(self, env: str | None) -> None:
        """Show each cell as its median over the same cell's median in `env`.

        Cells with no counterpart in `env` are left blank.
        """
        envs = {m.env for m in self._results}
        if env not in envs:
            named = sorted(_env_sort_key(e)[1] or UNSPECIFIED_ENV for e in envs)
            raise ValueError(f"Baseline env {env!r} is not among the results' envs: {named}")
        self._baseline_env = env
        self._relative = True

    def as_counts(self, unit: str = "instructions") -> None:
        """The samples are counts (e.g. instructions per run), not seconds:
        no time units, values shown as they are."""
        self._count_unit = unit

    def __str__(self) -> str:
        return "\n".join(self._render())

    def print(self) -> None:
        print(str(self))

    def tables(self) -> list[TableView]:
        """The tables as data, one per label, laid out as `print` lays them out."""
        return [table.view() for table in self._tables()]

    def _render(self) -> list[str]:
        return [table.render() for table in self._tables()]

    def _tables(self) -> list[_Table]:
        by_label: dict[str | None, list[Measurement]] = {}
        for m in Measurement.merge(self._results):
            by_label.setdefault(m.label, []).append(m)
        return [
            _Table(
                group,
                self._colorize,
                self._trim_significant_figures,
                self._highlight_warnings,
                self._baseline_env,
                self._relative,
                self._count_unit,
            )
            for group in by_label.values()
        ]
