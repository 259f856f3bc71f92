"""Steps in a history: where a benchmark's per-commit values change level, and by how much.

A history measures each commit in a few processes (`torchbench run --rounds`),
and on a shared machine a process lands in a fast or a ~2x slower group by
chance, so one process proves nothing. A commit's value is its *level*
(stats.level: a low quantile of its processes' pooled blocks, which moves only
when nearly all of them were slow). Detection works on levels in two stages,
and a step is only *reported* after a third (confirmation, in `torchbench find`):

1. candidates: `ruptures`. Up to EXACT_UP_TO commits, PELT with least
   absolute deviation on log values (an outlier or a slow process moves an
   L1 cost far less than an L2 one), with a penalty scaled by the series'
   own noise, estimated robustly from its commit-to-commit differences (or
   from the commits' sample spread when the series is flat), so that a noisy
   series needs a bigger step. Longer series get ruptures' compiled kernel
   search (KernelCPD, Gaussian kernel, whose median-heuristic bandwidth
   scales with the series' own spread and whose bounded cost an outlier
   cannot dominate) over overlapping 200-commit windows: the L1 search costs ~0.25 s a
   series at 2000 commits, 50 s for a 200-row site;
2. evidence, per candidate, from the two segments around it (Otava's
   approach: the change-point search proposes, a two-sample test disposes,
   and a candidate that fails is dropped and its neighbours re-tested): the
   alert's own statistic (stats.compare: faster-half means of per-commit
   values, a permutation test) where the segments have enough commits for
   that test to reach ALPHA at all (7 a side, or 4 against 30); with fewer,
   the commits' own intervals (stats.interval, from their
   samples) must separate the two segments completely. Either way the step
   must clear `floor`.

What stage 2 cannot do is make one commit's process trustworthy: two fast
commits next to two slow ones can be chance. That is what confirmation is for
(the commits on both sides re-measured in alternating processes).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import asdict, dataclass
from typing import Callable, Iterable, NamedTuple, Sequence

import numpy as np

from .. import stats
from ..asv_bridge.results import Row

__all__ = ["Step", "History", "Found", "Point", "Windows", "detect", "from_points", "histories", "find_steps", "MIN_SEGMENT",
           "ALPHA", "FLOOR", "PENALTY", "SHORT_NOISES", "WINDOW"]

MIN_SEGMENT = 2  # commits on each side of a step: a single new commit is the alert's business
ALPHA = 0.001  # Otava's default; the test runs at the best split of many, so it must be strict
FLOOR = 0.05  # the changes that matter here are ~5%
MODEL = "l1"
PENALTY = 0.5  # times noise x log(n): liberal, since every candidate must then show its evidence
KERNEL_PENALTY = 1.0  # times log(n), for the kernel search on long series (its cost is scale-free)
SHORT_NOISES = 1.5  # a step between segments too short to test must be this many noise scales high
EXACT_UP_TO = 100  # commits: PELT on L1 up to here (a few ms a series), the kernel search beyond
SPAN = 200  # commits in one window of the kernel search: its cost grows faster than the window (17 ms a
# 2000-commit series at 200, 58 ms at 400, the same steps found on synthetic series)
WINDOW = 50  # commits a side at most in a candidate's test (Otava's window): bounded cost, and drift far away
# does not count as evidence
_RESAMPLES = 4000  # p-values down to 2.5e-4, below ALPHA
_SCREEN = 400  # resamples of the first look: a candidate far from ALPHA is dropped after these


@dataclass(frozen=True)
class Step:
    at: int  # the first commit at the new level (its position in the series)
    ratio: float  # after / before (faster-half means of per-commit values)
    ci_low: float | None  # the ratio's interval (stats.compare's); None with fewer than 3 commits a side
    ci_high: float | None
    p_value: float | None  # None: too few commits a side for the test; decided by the intervals
    n_before: int
    n_after: int
    evidence: str  # "test" or "intervals"

    def to_dict(self) -> dict:
        return {k: (v if not isinstance(v, float) or math.isfinite(v) else None) for k, v in asdict(self).items()}


def _noise(y: np.ndarray, spreads: np.ndarray | None) -> float:
    """A robust scale of commit-to-commit noise on the log scale (MAD of first differences / sqrt 2)."""
    scale = 0.0
    if len(y) >= 3:
        d = np.diff(y)
        scale = 1.4826 * float(np.median(np.abs(d - np.median(d)))) / math.sqrt(2)
    if spreads is not None and len(spreads):
        scale = max(scale, float(np.median(spreads)))
    return max(scale, 1e-3)


class Windows:
    """The kernel search's candidates per window, kept between publishes (publish/page_cache.py): a window of the same
    values gives the same candidates, and the windows are fixed from a series' start, so a new commit
    falls in the last one or two and the others are not searched again."""

    def __init__(self, known: dict | None = None):
        self.known = known or {}
        self.used: dict[bytes, list[int]] = {}

    def get(self, part: np.ndarray, search: Callable[[], list[int]]) -> list[int]:
        key = hashlib.sha1(part.tobytes() + repr((KERNEL_PENALTY, MIN_SEGMENT)).encode()).digest()
        if key not in self.used:
            known = self.known.get(key)
            self.used[key] = known if known is not None else search()
        return self.used[key]


def _bandwidth(signal: np.ndarray) -> float:
    """ruptures' CostRbf gamma by its median heuristic, computed as it computes it (the same float): given
    to KernelCPD, whose compiled search needs nothing else, it spares the Gaussian Gram matrix (an exp of
    every pair) that CostRbf builds only to find this median (a third of the search's time, profiled)."""
    from scipy.spatial.distance import pdist

    median = np.median(pdist(signal, metric="sqeuclidean"))
    return 1 / median if median != 0 else 1.0


def _candidates(y: np.ndarray, noise: float, penalty: float, windows: Windows | None = None) -> list[int]:
    import ruptures

    if len(y) < 2 * MIN_SEGMENT:
        return []
    if len(y) <= EXACT_UP_TO:  # the exact optimum (a step and its fix in six commits included)
        found = ruptures.Pelt(model=MODEL, min_size=MIN_SEGMENT, jump=1).fit(y).predict(
            pen=penalty * noise * math.log(len(y)))
        return [b for b in found if b < len(y)]

    def search(part: np.ndarray) -> list[int]:
        signal = part.reshape(-1, 1).astype(np.double)
        found = ruptures.KernelCPD(kernel="rbf", min_size=MIN_SEGMENT, params={"gamma": _bandwidth(signal)}).fit(
            signal).predict(pen=KERNEL_PENALTY * math.log(len(part)))
        return [int(b) for b in found if b < len(part)]

    # windows overlapping by two evidence windows, so that every step lies well inside one of them
    windows = windows or Windows()
    cuts: set[int] = set()
    for start in range(0, max(len(y) - 2 * WINDOW, 1), SPAN - 2 * WINDOW):
        part = y[start:start + SPAN]
        cuts.update(start + b for b in windows.get(part, lambda part=part: search(part)))
    merged: list[int] = []
    for b in sorted(cuts):  # a step seen by two windows a commit apart is one candidate
        if not merged or b - merged[-1] >= MIN_SEGMENT:
            merged.append(b)
    return merged


def _as_array(intervals: Sequence[stats.Interval] | np.ndarray | None) -> np.ndarray | None:
    """Commits' intervals as an (n, 5) array of stats.Interval's fields (the pages keep them so already)."""
    if intervals is None or isinstance(intervals, np.ndarray):
        return intervals
    return np.array([(i.median, i.low, i.high, i.n, i.level) for i in intervals], dtype=float).reshape(-1, 5)


def _bounds(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Commits' intervals (low, high); a commit's median alone where it had too few samples for one."""
    none = np.isnan(a[:, 1]) | np.isnan(a[:, 2])
    return np.where(none, a[:, 0], a[:, 1]), np.where(none, a[:, 0], a[:, 2])


def _separated(before: np.ndarray, after: np.ndarray, up: bool) -> bool:
    (b_low, b_high), (a_low, a_high) = _bounds(before), _bounds(after)
    if up:
        return bool(b_high.max() < a_low.min())
    return bool(b_low.min() > a_high.max())


def _evidence(values: np.ndarray, intervals: np.ndarray | None, lo: int, at: int, hi: int,
              floor: float, alpha: float, noise: float) -> Step | None:
    lo, hi = max(lo, at - WINDOW), min(hi, at + WINDOW)
    before, after = values[lo:at], values[at:hi]
    # the smallest two-sided permutation p-value is 2 / C(n1 + n2, n1): below that count the test cannot decide
    if math.comb(len(before) + len(after), len(before)) >= math.ceil(10 / alpha):
        # a first look with few resamples drops a candidate that is nowhere near ALPHA (most of them, in a
        # long noisy series). It drops one whose two-sided p-value is ALPHA when its estimate reaches 20 x
        # ALPHA: 4 or more of the 400 draws as extreme on the observed tail, each with probability ALPHA / 2,
        # a binomial tail of about 5.5e-5 (scipy.stats.binom.sf(3, 400, 0.0005))
        if stats.permutation_p(before, after, resamples=_SCREEN) >= 20 * alpha:
            return None
        c = stats.compare(before, after, alpha=alpha, resamples=_RESAMPLES, with_mde=False)
        if c.p_value <= alpha and abs(c.ratio - 1) >= floor:
            return Step(at, c.ratio, c.ci_low, c.ci_high, c.p_value, len(before), len(after), "test")
        return None
    if intervals is None:
        return None
    # the cheap check first: only segments whose intervals separate get the (resampling) comparison; the
    # faster-half means of separated segments are ordered as the segments are
    if not (_separated(intervals[lo:at], intervals[at:hi], True)
            or _separated(intervals[lo:at], intervals[at:hi], False)):
        return None
    c = stats.compare(before, after, alpha=alpha, resamples=_RESAMPLES, with_mde=False)
    if abs(math.log(c.ratio)) >= max(math.log1p(floor), SHORT_NOISES * noise):
        has_ci = c.ci_low > 0 and math.isfinite(c.ci_high)  # none from fewer than 3 commits a side
        return Step(at, c.ratio, c.ci_low if has_ci else None, c.ci_high if has_ci else None, None, len(before),
                    len(after), "intervals")
    return None


def detect(values: Sequence[float], intervals: Sequence[stats.Interval] | np.ndarray | None = None, *,
           floor: float = FLOOR,
           alpha: float = ALPHA, penalty: float = PENALTY, windows: Windows | None = None) -> list[Step]:
    """Steps in one series of per-commit values (times, in commit order), each with its evidence.

    `intervals`: each commit's interval from its own samples (stats.interval, or their fields as an (n, 5)
    array, as the pages keep them); used for the noise floor and
    to decide steps between segments too short for the test. Non-finite values must be left out by the caller.
    `windows`: the long-series search's candidates from an earlier call (kept by the caller: publish/page_cache.py).
    """
    v = np.asarray(values, dtype=float)
    if len(v) < 2 * MIN_SEGMENT or not np.all(np.isfinite(v)) or np.any(v <= 0):
        return []
    y = np.log(v)
    spreads = None
    intervals = _as_array(intervals)
    if intervals is not None:
        low, high = intervals[:, 1], intervals[:, 2]
        with np.errstate(invalid="ignore"):
            known = (low > 0) & np.isfinite(high)  # (nan > 0 is False: no interval, left out)
        spreads = (np.log(high[known]) - np.log(low[known])) / 2
    noise = _noise(y, spreads)
    cuts = _candidates(y, noise, penalty, windows)
    # drop the weakest unsupported candidate, re-test its neighbours against the merged segment, repeat
    # (each (lo, at, hi) is tested once: a removal leaves every other candidate's segments as they were)
    tested: dict[tuple[int, int, int], Step | None] = {}

    def evidence(lo: int, at: int, hi: int) -> Step | None:
        if (lo, at, hi) not in tested:
            tested[lo, at, hi] = _evidence(v, intervals, lo, at, hi, floor, alpha, noise)
        return tested[lo, at, hi]

    while True:
        bounds = [0, *cuts, len(v)]
        steps = [evidence(bounds[k], bounds[k + 1], bounds[k + 2]) for k in range(len(cuts))]
        failing = [k for k, s in enumerate(steps) if s is None]
        if not failing:
            return [s for s in steps if s is not None]
        gaps = [abs(y[bounds[k + 1]:bounds[k + 2]].mean() - y[bounds[k]:bounds[k + 1]].mean()) for k in failing]
        del cuts[failing[int(np.argmin(gaps))]]


@dataclass
class History:
    """One benchmark row's values along the tracked branch, in one environment on one machine."""

    machine: str
    env_name: str
    benchmark: str
    index: int
    name: str  # asv's row name, benchmark(params)
    unit: str | None
    commits: list[str]
    values: list[float]
    intervals: list[stats.Interval] | np.ndarray  # or their fields as an (n, 5) array (the pages' columns)

    @property
    def key(self) -> str:  # the same from the results (find) and from the pages (publish)
        return f"{self.machine}/{self.env_name}/{self.benchmark}/{self.index}"


@dataclass
class Found:
    history: History
    step: Step

    @property
    def before(self) -> str:  # the last commit at the old level
        return self.history.commits[self.step.at - 1]

    @property
    def after(self) -> str:  # the first commit at the new level
        return self.history.commits[self.step.at]

    def to_dict(self) -> dict:
        h = self.history
        return {"key": h.key, "machine": h.machine, "env_name": h.env_name, "benchmark": h.benchmark,
                "index": h.index, "name": h.name, "unit": h.unit, "before": self.before, "after": self.after,
                "value_before": float(np.median(h.values[:self.step.at])),
                "value_after": float(np.median(h.values[self.step.at:])), **self.step.to_dict()}


class Point(NamedTuple):
    """One commit's value of one series, as the reader of results or the pages have it."""

    machine: str
    env_name: str
    benchmark: str
    index: int
    name: str
    unit: str | None
    position: int  # on the branch
    commit: str
    interval: stats.Interval  # its level is the commit's value (stats.level)


def from_points(points: Iterable[Point]) -> list[History]:
    """Group points into histories, each in branch order."""
    grouped: dict[tuple, dict[int, Point]] = {}
    for p in points:
        grouped.setdefault((p.machine, p.env_name, p.benchmark, p.index), {})[p.position] = p
    found = []
    for key in sorted(grouped):
        ps = [grouped[key][position] for position in sorted(grouped[key])]
        found.append(History(*key, ps[0].name, ps[0].unit, [p.commit for p in ps],
                             [p.interval.level for p in ps], [p.interval for p in ps]))
    return found


def histories(rows: Iterable[Row], order: dict[str, int]) -> list[History]:
    """Every benchmark row's history over the commits in ORDER (commit -> position on the branch)."""
    return from_points(Point(r.machine, r.env_name, r.benchmark, r.index, r.name, r.unit, order[r.commit],
                             r.commit, stats.interval(r.samples or (r.value,)))
                       for r in rows if r.status == "ok" and r.commit in order)


def prepare() -> None:
    """Import the search's library (ruptures, which imports scipy.stats, .spatial and .signal: ~0.6 s and
    ~70 MiB), ahead of the search where that can overlap other work."""
    import ruptures  # noqa: F401


def _in_order(job: Callable[[int], object], n: int) -> list:
    return [job(i) for i in range(n)]


def find_steps(found: Iterable[History], *, windows: Windows | None = None,
               each: Callable[[Callable[[int], object], int], list] = _in_order, **options) -> list[Found]:
    """The steps in every history (options: detect's floor, alpha, penalty). `windows`: the search's memo,
    which gets every window looked at in its `used`. `each(job, n)` gives [job(0), ..., job(n - 1)]: in
    order here by default; publish/forked.map_forked runs them on every core, so a job's memo is its own
    and comes back with its steps."""
    histories = list(found)
    windows = windows if windows is not None else Windows()
    if sum(len(h.values) >= 2 * MIN_SEGMENT for h in histories) > 1:
        prepare()  # once, here: forked workers would each import it (~70 MiB apiece)

    def job(i: int) -> tuple[list[Step], dict]:
        mine = Windows(windows.known)
        return detect(histories[i].values, histories[i].intervals, windows=mine, **options), mine.used

    out = []
    for h, (steps, used) in zip(histories, each(job, len(histories))):
        windows.used.update(used)
        out += [Found(h, s) for s in steps]
    return out
