"""Line charts with confidence bands and step marks, laid out here and drawn as inline SVG by
html_templates/chart.svg.j2; and sparklines for the landing page.

Inline SVG rendered when the page is published needs no charting script, no
CDN and no data loaded over XHR, so the page works opened from disk. What a
charting library would add (zoom, pan) is not worth a script for a few
hundred points; the geometry (scales, ticks, paths) is all this module does.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from collections.abc import Iterable, Sequence
from typing import Callable

import numpy as np
from markupsafe import Markup

__all__ = ["Chart", "Line", "Mark", "Marks", "StepMark", "chart", "colors_for", "scale_text", "spark_scale", "sparkline"]

WIDTH, HEIGHT = 720, 260
LEFT, RIGHT, TOP, BOTTOM = 64, 40, 24, 40
DOTS_UP_TO = 300  # marks a line: a longer line draws dots only where they link somewhere (its dots would be
# closer than their size, so none could be hovered alone; the line and its band show the values)
PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]


@dataclass(frozen=True, slots=True)
class Mark:
    x: float  # position in the history (index of the commit)
    y: float
    low: float  # band; nan where unknown
    high: float
    href: str | None  # what clicking the point opens (a flame graph)
    title: str | Callable[[], str]  # tooltip; a function where most marks of a long line are never drawn
    mid: float = math.nan  # a second statistic drawn thin beside the line (the median, where y is the level)

    @property
    def text(self) -> str:
        return self.title if isinstance(self.title, str) else self.title()


class Marks(Sequence):
    """A line's marks as columns, each Mark made only when asked for: a history of 2000 commits draws a line
    of 2000 values, and few of its marks are ever drawn as dots (DOTS_UP_TO)."""

    def __init__(self, x, y, low, high, mid, hrefs: Sequence[str | None] | None,
                 title: Callable[[int], str]):
        self.x = np.asarray(x)  # positions: whole numbers stay whole (the page's script reads them as JSON)
        self.y, self.low, self.high, self.mid = (np.asarray(v, dtype=float) for v in (y, low, high, mid))
        self.hrefs = hrefs  # None: no mark links anywhere
        self.title = title  # mark i's tooltip

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        return Mark(self.x[i].item(), float(self.y[i]), float(self.low[i]), float(self.high[i]),
                    self.hrefs[i] if self.hrefs is not None else None, lambda: self.title(i), float(self.mid[i]))

    def linked(self) -> list[int]:
        """The marks that link somewhere."""
        return [] if self.hrefs is None else [i for i, h in enumerate(self.hrefs) if h]


def _columns(marks: Sequence[Mark]) -> Marks:
    if isinstance(marks, Marks):
        return marks
    return Marks([m.x for m in marks], [m.y for m in marks], [m.low for m in marks], [m.high for m in marks],
                 [m.mid for m in marks], [m.href for m in marks], lambda i: marks[i].text)


@dataclass
class Line:
    name: str  # legend
    marks: Sequence[Mark]  # a list of Marks, or Marks (columns)
    case: str = ""  # what the colour follows (defaults to the name)
    dash: str = ""  # SVG stroke-dasharray: tells apart lines of one case (machines, environments)
    color: str = ""
    path: str = ""
    mid_path: str = ""  # the marks' `mid` values, where known
    band: str = ""
    points_svg: Markup = Markup("")
    xy: tuple[list[float], list[float]] = ([], [])  # each mark's place in the plot (pixels), set by `chart`

    @property
    def points(self) -> list[tuple[float, float, Mark]]:
        """(x, y, mark) of every mark, in pixels (made when asked: a long line has thousands)."""
        return list(zip(*self.xy, self.marks))


@dataclass(frozen=True)
class StepMark:
    """A step of the history on a chart: a vertical rule at its first commit at the new level."""

    x: float  # position in the history, as Mark.x
    status: str  # confirmed, unconfirmed (a candidate), inconclusive, refuted: the rule's style
    href: str  # the step's entry on the Steps page
    title: str  # tooltip
    px: float = math.nan  # set by `chart`


@dataclass
class Chart:
    title: str
    y_label: str
    width: int
    height: int
    lines: list[Line]
    y_ticks: list[tuple[float, str]]  # (pixel y, label)
    x_ticks: list[tuple[float, str]]
    plot: tuple[float, float, float, float]  # x0, y0, x1, y1
    steps: list[StepMark] = field(default_factory=list)
    x_range: tuple[float, float] = (0.0, 1.0)  # the history positions at plot[0] and plot[2]
    hover: dict | None = None  # data for the page's script to show the commit under the pointer (long lines)
    log_axis: bool = False  # values spanning more than LOG_AXIS_RATIO are drawn on a log scale


def _points_svg(xs: list[float], ys: list[float], marks: Marks, color: str) -> Markup:
    """The dots as SVG (every mark of a short line, the linked ones of a long one), made here rather than in
    a template loop: a history of 2000 commits has tens of thousands of points, and jinja2 escaping each
    attribute costs seconds. Coordinates are numbers; the tooltip and link are escaped."""
    parts = []
    fill = html.escape(color)
    drawn = range(len(marks)) if len(marks) <= DOTS_UP_TO else marks.linked()
    for i in drawn:
        m = marks[i]
        circle = f'<circle cx="{xs[i]}" cy="{ys[i]}" r="3.5" fill="{fill}"><title>{html.escape(m.text)}</title></circle>'
        parts.append(f'<a href="{html.escape(m.href)}">{circle}</a>' if m.href else circle)
    return Markup("\n".join(parts))  # noqa: S704 (every text above is escaped)


_DIGITS = 5  # integer digits a coordinate may have in the vectorised formatting (a chart is 720 px wide)


def _path(xs: np.ndarray, ys: np.ndarray) -> str:
    """An SVG path through points whose coordinates are rounded to tenths: "M587.8,293.4 L272.0,27.4 ...",
    as Python writes those floats. Written with numpy, a byte per character, rather than a string per
    number: a site of 2000 commits x 200 rows has ~3 million points, and Python's float formatting alone
    took ~2 s of a publish (profiled). Values it cannot write so (not finite, too large) go through Python."""
    xy = np.column_stack([xs, ys]).ravel()
    if not len(xy) or not np.isfinite(xy).all() or np.abs(xy).max() >= 10 ** _DIGITS - 0.05:
        return "M" + " L".join(f"{x},{y}" for x, y in zip(xs.tolist(), ys.tolist()))
    tenths = np.rint(np.abs(xy) * 10).astype(np.int64)
    whole = tenths // 10
    # per number: sign, _DIGITS integer digits, ".", one decimal, then its separator ("," after x, " L" after y)
    chars = np.zeros((len(xy), _DIGITS + 5), dtype=np.uint8)
    keep = np.zeros(chars.shape, dtype=bool)
    chars[:, 0], keep[:, 0] = ord("-"), np.signbit(xy)  # as Python writes -0.0
    for k in range(_DIGITS):  # the digit of 10**k, kept from the first non-zero one (the units always)
        column = _DIGITS - k
        chars[:, column] = ord("0") + whole // 10 ** k % 10
        keep[:, column] = (whole >= 10 ** k) | (k == 0)
    chars[:, _DIGITS + 1], chars[:, _DIGITS + 2] = ord("."), ord("0") + tenths % 10
    keep[:, _DIGITS + 1:_DIGITS + 3] = True
    chars[0::2, _DIGITS + 3], keep[0::2, _DIGITS + 3] = ord(","), True
    chars[1::2, _DIGITS + 3], chars[1::2, _DIGITS + 4] = ord(" "), ord("L")
    keep[1:-1:2, _DIGITS + 3:] = True  # after every y but the last
    return "M" + chars[keep].tobytes().decode("ascii")


def colors_for(names) -> dict[str, str]:
    """A colour per name, none shared: the palette's, then hues spread around the colour wheel (a label of 14
    cases would otherwise repeat colours within one chart)."""
    unique = list(dict.fromkeys(names))
    if len(unique) <= len(PALETTE):
        return {name: PALETTE[i] for i, name in enumerate(unique)}
    return {name: f"hsl({round(i * 360 / len(unique))}, 65%, {42 if i % 2 else 52}%)" for i, name in enumerate(unique)}


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    if not math.isfinite(low) or not math.isfinite(high):
        return []
    if high == low:
        high, low = high + 1, low - 1
    step = 10 ** math.floor(math.log10((high - low) / count))
    for factor in (1, 2, 5, 10):
        if (high - low) / (step * factor) <= count:
            step *= factor
            break
    return [float(v) for v in np.arange(math.ceil(low / step) * step, high + step / 2, step)]


def _log_ticks(low: float, high: float) -> list[float]:
    """Ticks of a log axis between two values: 1, 2, 5 times powers of ten (every digit where that gives
    fewer than three)."""
    for mantissas in ((1, 2, 5), tuple(range(1, 10))):
        found = [m * 10.0 ** k for k in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
                 for m in mantissas if low <= m * 10.0 ** k <= high]
        if len(found) >= 3:
            return found
    return found


def _fmt(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"


LOG_AXIS_RATIO = 4.0  # a chart whose values span more than this factor gets a log axis: a 5% step of its
# smallest row stays as tall as one of its largest (rows of 2 us and 1 ms share the dispatch charts)


def chart(title: str, y_label: str, lines: list[Line], x_labels: dict[float, str],
          colors: dict[str, str] | None = None, steps: list[StepMark] = (), from_zero: bool = True) -> Chart:
    """Scales every line into one plot; bands are drawn where both bounds are known, `mid` values as a
    second path, `steps` as rules at their positions; the axis starts at zero where that does not squash the
    data (unless not `from_zero`: ratios). `colors` (name -> colour, see `colors_for`) keeps a
    case the same colour in every chart of a page."""
    # The scale follows the values (y and mid): a wide band (few samples) is clipped at the plot's edge
    # rather than squashing every line into a corner.
    columns = [_columns(line.marks) for line in lines]
    values = np.concatenate([np.concatenate([c.y, c.mid]) for c in columns]) if columns else np.zeros(0)
    values = values[np.isfinite(values)]
    xs_all = np.concatenate([c.x for c in columns]) if columns else np.zeros(0)
    y_min, y_max = (float(values.min()), float(values.max())) if len(values) else (0.0, 1.0)
    log_axis = y_min > 0 and y_max > LOG_AXIS_RATIO * y_min
    if log_axis:  # the scale below works on log10 of the values
        y_min, y_max = math.log10(y_min) - 0.06, math.log10(y_max) + 0.06
    else:
        if from_zero and y_min > 0 and y_min < 0.5 * y_max:
            y_min = 0.0  # from zero, when that does not squash the data
        pad = (y_max - y_min) * 0.15 or abs(y_max) * 0.15 or 1.0
        y_min, y_max = y_min - pad, y_max + pad

    def on_axis(v) -> np.ndarray:
        v = np.asarray(v, dtype=float)
        if not log_axis:
            return v
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(v > 0, np.log10(np.where(v > 0, v, 1.0)), np.nan)
    x_min, x_max = (xs_all.min().item(), xs_all.max().item()) if len(xs_all) else (0.0, 1.0)
    if x_max == x_min:
        x_min, x_max = x_min - 1, x_max + 1
    x0, y0, x1, y1 = LEFT, TOP, WIDTH - RIGHT, HEIGHT - BOTTOM

    def px(x: float) -> float:
        return round(x0 + (x - x_min) / (x_max - x_min) * (x1 - x0), 1)

    def py(y: float) -> float:
        return round(y1 - (y - y_min) / (y_max - y_min) * (y1 - y0), 1)

    def scale(values, low, high, p0, p1):  # numpy: a long history has thousands of points a line
        return np.round(p0 + (np.asarray(values, dtype=float) - low) / (high - low) * (p1 - p0), 1)

    for i, (line, c) in enumerate(zip(lines, columns)):
        line.case = line.case or line.name
        line.color = (colors or {}).get(line.case) or PALETTE[i % len(PALETTE)]
        xs, ys = scale(c.x, x_min, x_max, x0, x1), scale(on_axis(c.y), y_min, y_max, y1, y0)
        line.xy = (xs.tolist(), ys.tolist())
        line.points_svg = _points_svg(*line.xy, c, line.color)
        line.path = _path(xs, ys) if len(xs) else ""
        mid, low, high = on_axis(c.mid), on_axis(c.low), on_axis(c.high)
        has_mid = np.isfinite(mid)
        if has_mid.sum() >= 2:
            line.mid_path = _path(xs[has_mid], scale(mid[has_mid], y_min, y_max, y1, y0))
        banded = np.isfinite(low) & np.isfinite(high)
        if banded.sum() >= 2:
            bx = xs[banded]
            highs = scale(high[banded], y_min, y_max, y1, y0)
            lows = scale(low[banded], y_min, y_max, y1, y0)
            line.band = _path(np.concatenate([bx, bx[::-1]]), np.concatenate([highs, lows[::-1]])) + " Z"
    if log_axis:
        y_ticks = [(py(math.log10(v)), _fmt(v)) for v in _log_ticks(10 ** y_min, 10 ** y_max)]
    else:
        y_ticks = [(py(v), _fmt(v)) for v in _ticks(y_min, y_max)]
    step = max(1, math.ceil(len(x_labels) / 8))
    x_ticks = [(px(x), label) for i, (x, label) in enumerate(sorted(x_labels.items())) if i % step == 0]
    marks = [StepMark(s.x, s.status, s.href, s.title, px(s.x)) for s in steps if x_min <= s.x <= x_max]
    return Chart(title, y_label, WIDTH, HEIGHT, lines, y_ticks, x_ticks, (x0, y0, x1, y1), marks, (x_min, x_max),
                 log_axis=log_axis)


def spark_scale(levels: Iterable[Sequence[float]], floor: float) -> tuple[float, float]:
    """One relative scale for a label's sparklines: the lowest and highest log ratio of any case's level to
    that case's own median level, and never narrower than +-floor, so that a 10% wobble draws a tenth as
    tall as a 2x step beside it, and a flat case draws flat."""
    low, high = -math.log1p(floor), math.log1p(floor)
    for values in levels:
        x = np.log(np.asarray([v for v in values if math.isfinite(v) and v > 0], dtype=float))
        if len(x):
            x = x - np.median(x)
            low, high = min(low, float(x.min())), max(high, float(x.max()))
    return low, high


def scale_text(scale: tuple[float, float]) -> str:
    """A spark scale as the range it draws: '-12% to +180% of each case's median'."""
    low, high = (f"{math.expm1(v) * 100:+.0f}%" for v in scale)
    return f"{low} to {high} of each case's median"


def sparkline(values: list[float], scale: tuple[float, float], steps: Sequence[int] = (), width: int = 120,
              height: int = 24, color: str = PALETTE[0]) -> Markup:
    """A small inline SVG of `values` as log ratios to their own median, on `scale` (spark_scale: shared by
    a label's cases), with the last value dotted and a rule at each index in `steps` (the first commit at
    the new level of a confirmed step); non-finite values are skipped; empty for none. Only numbers and the
    colour (escaped) go into it."""
    points = [(i, math.log(v)) for i, v in enumerate(values) if math.isfinite(v) and v > 0]
    if not points:
        return Markup("")
    middle = float(np.median([v for _, v in points]))
    low, high = scale
    span, last = (high - low) or 1.0, max(len(values) - 1, 1)

    def x_of(i: float) -> float:
        return round(1 + i / last * (width - 4), 1)

    def y_of(v: float) -> float:
        return round(height - 2 - (min(max(v - middle, low), high) - low) / span * (height - 4), 1)

    xy = [(x_of(i), y_of(v)) for i, v in points]
    fill = html.escape(color)
    path = " ".join(f"{x},{y}" for x, y in xy)
    rules = "".join(f'<line class="spark-step" x1="{x_of(i - 0.5)}" x2="{x_of(i - 0.5)}" y1="0" y2="{height}" '
                    f'stroke="#b00" stroke-width="1"/>' for i in steps if 0 < i < len(values))
    zero = y_of(middle)
    x, y = xy[-1]
    return Markup(  # noqa: S704 (numbers and an escaped colour)
        f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
        f'<line x1="0" x2="{width}" y1="{zero}" y2="{zero}" stroke="#ddd" stroke-width="1"/>{rules}'
        f'<polyline points="{path}" fill="none" stroke="{fill}" stroke-width="1.2"/>'
        f'<circle cx="{x}" cy="{y}" r="2" fill="{fill}"/></svg>')