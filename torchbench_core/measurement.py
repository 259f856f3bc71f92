"""The numbers a Timer produced: raw block times plus the TaskSpec they belong to.

Raw samples are kept, never only a summary, so that history files can be
re-analysed later (asv's Mann-Whitney test, a publisher regrouping tables).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import json
import math
from typing import Any, Iterable

import numpy as np

from .task_spec import TASK_SPEC_FIELDS, TaskSpec
from .units import select_unit

SCHEMA = "torchbench_core.Measurement"
SCHEMA_VERSION = 1

_MAX_SIGNIFICANT_FIGURES = 4
_MIN_CONFIDENCE_INTERVAL = 25e-9  # 25 ns: below this a clock read is noise.
IQR_WARN_THRESHOLD = 0.1
IQR_GROSS_WARN_THRESHOLD = 0.25


class MeasurementFormatError(ValueError):
    """A serialised Measurement that cannot be read; the message says where."""


@dataclasses.dataclass(repr=False)
class Measurement:
    """Block times of one statement; statistics are per run, in seconds."""

    number_per_run: int
    raw_times: list[float]
    task_spec: TaskSpec
    metadata: dict[Any, Any] | None = None  # Reserved for user payloads.

    def __getattr__(self, name: str) -> Any:
        # Forward TaskSpec fields (stmt, label, env, ...) as torch does.
        # Only reached for names not found normally, so no recursion on fields.
        if name in TASK_SPEC_FIELDS:
            return getattr(self.task_spec, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    # -- statistics ---------------------------------------------------------
    @property
    def times(self) -> list[float]:
        return [t / self.number_per_run for t in self.raw_times]

    @functools.cached_property
    def _sorted(self) -> np.ndarray:
        if not self.raw_times:
            raise ValueError(f"Measurement of {self.task_spec.title!r} has no samples")
        return np.sort(np.asarray(self.raw_times, dtype=np.float64) / self.number_per_run)

    @functools.cached_property
    def _quartiles(self) -> tuple[float, float, float]:
        # Linear interpolation, the same rule as torch.quantile.
        p25, p50, p75 = np.quantile(self._sorted, [0.25, 0.5, 0.75])
        return float(p25), float(p50), float(p75)

    @property
    def median(self) -> float:
        return self._quartiles[1]

    @property
    def mean(self) -> float:
        return float(np.mean(self._sorted))

    @property
    def iqr(self) -> float:
        return self._quartiles[2] - self._quartiles[0]

    def quantile(self, q: float | Iterable[float]) -> float | list[float]:
        result = np.quantile(self._sorted, q)
        return float(result) if np.ndim(result) == 0 else [float(v) for v in result]

    def median_ci(self, confidence: float = 0.99) -> tuple[float, float]:
        """Distribution-free confidence interval of the median (order statistics).

        NaN bounds mean there are too few samples for this confidence level
        (at 99% a median needs at least 8 samples).
        """
        from scipy import stats  # deferred: scipy.stats costs ~0.5 s to import

        ci = stats.quantile_test(self._sorted, q=self.median, p=0.5).confidence_interval(
            confidence_level=confidence
        )
        return float(ci.low), float(ci.high)

    @property
    def significant_figures(self) -> int:
        """Rough precision estimate from the interquartile points (torch's rule).

        Used by Compare.trim_significant_figures; z=1.645 approximates t.
        """
        n = len(self._sorted)
        middle = self._sorted[n // 4 : math.ceil(3 * n / 4)]
        std = float(np.std(middle))
        ci = max(1.645 * std / math.sqrt(len(middle)), _MIN_CONFIDENCE_INTERVAL)
        if self.median <= 0:
            return 1
        figures = math.floor(math.log10(self.median / ci))
        return min(max(figures, 1), _MAX_SIGNIFICANT_FIGURES)

    @functools.cached_property
    def warnings(self) -> tuple[str, ...]:
        if self.median <= 0:
            return ()
        rel_iqr = self.iqr / self.median
        if rel_iqr >= IQR_GROSS_WARN_THRESHOLD:
            reason = "This suggests significant environmental influence."
        elif rel_iqr >= IQR_WARN_THRESHOLD:
            reason = "This could indicate system fluctuation."
        else:
            return ()
        return (
            f"  WARNING: Interquartile range is {rel_iqr * 100:.1f}% "
            f"of the median measurement.\n           {reason}",
        )

    @property
    def has_warnings(self) -> bool:
        return bool(self.warnings)

    def meets_confidence(self, threshold: float = IQR_WARN_THRESHOLD) -> bool:
        return self.iqr / self.median < threshold

    # -- naming -------------------------------------------------------------
    @property
    def title(self) -> str:
        return self.task_spec.title

    @property
    def as_row_name(self) -> str:
        return self.sub_label or self.stmt or "[Unknown]"

    def __repr__(self) -> str:
        """torch.utils.benchmark's layout, so printed output reads the same."""
        n = len(self._sorted)
        unit, scale = select_unit(self.median)
        p25, median, p75 = self._quartiles
        lines = [object.__repr__(self), self.task_spec.summarize()]
        lines.append(f"  {'Median: ' if n > 1 else ''}{median / scale:.2f} {unit}")
        if n >= 4:
            lines.append(
                f"  IQR:    {self.iqr / scale:.2f} {unit} ({p25 / scale:.2f} to {p75 / scale:.2f})"
            )
        threads = f"{self.num_threads} thread{'s' if self.num_threads > 1 else ''}"
        if n > 1:
            lines.append(f"  {n} measurements, {self.number_per_run} runs per measurement, {threads}")
        else:
            # torch prints "runs , 1 thread" here; the stray space is not kept.
            lines.append(f"  {n} measurement, {self.number_per_run} runs, {threads}")
        lines.extend(self.warnings)
        return "\n".join(lines).strip()

    # -- combining ----------------------------------------------------------
    @staticmethod
    def merge(measurements: Iterable["Measurement"]) -> list["Measurement"]:
        """Pool replicates with identical TaskSpecs (per-run times; metadata dropped)."""
        groups: dict[TaskSpec, list[float]] = collections.defaultdict(list)
        for m in measurements:
            groups[m.task_spec].extend(m.times)
        return [Measurement(1, times, spec) for spec, times in groups.items()]

    # -- serialisation ------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "number_per_run": self.number_per_run,
            "raw_times": [float(t) for t in self.raw_times],
            "task_spec": self.task_spec.to_dict(),
            "metadata": self.metadata,
        }

    def to_json(self, **kwargs: Any) -> str:
        try:
            return json.dumps(self.to_dict(), allow_nan=False, **kwargs)
        except (TypeError, ValueError) as e:
            raise TypeError(
                f"Measurement {self.title!r} cannot be written as JSON: {e} "
                "(metadata must hold only JSON values; times must be finite)"
            ) from e

    @classmethod
    def from_torch(cls, result: Any) -> Any:
        """A torch.utils.benchmark Measurement as ours (the same fields: a table can hold both libraries' rows,
        as when results pickled by torch are compared with new ones); anything else unchanged."""
        if type(result).__module__.startswith("torch.utils.benchmark") and type(result).__name__ == "Measurement":
            spec = result.task_spec
            return cls(result.number_per_run, list(result.raw_times),
                       TaskSpec(**{name: getattr(spec, name) for name in TASK_SPEC_FIELDS}), result.metadata)
        return result

    @classmethod
    def from_json(cls, text: str | bytes, *, source: str = "<string>") -> "Measurement":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise MeasurementFormatError(f"{source}: not valid JSON: {e}") from e
        return cls.from_dict(data, source=source)

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "<dict>") -> "Measurement":
        def fail(msg: str) -> MeasurementFormatError:
            return MeasurementFormatError(f"{source}: {msg}")

        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            found = data.get("schema") if isinstance(data, dict) else type(data).__name__
            raise fail(f"not a torchbench_core Measurement (schema {found!r}, expected {SCHEMA!r})")
        version = data.get("schema_version")
        if not isinstance(version, int) or isinstance(version, bool):
            raise fail(f"schema_version must be an integer, got {version!r}")
        if version > SCHEMA_VERSION:
            raise fail(
                f"written with schema_version {version}; this torchbench_core reads "
                f"up to {SCHEMA_VERSION}: upgrade torchbench_core"
            )
        number = data.get("number_per_run")
        if not isinstance(number, int) or isinstance(number, bool) or number < 1:
            raise fail(f"number_per_run must be a positive integer, got {number!r}")
        raw = data.get("raw_times")
        if (
            not isinstance(raw, list)
            or not raw
            or not all(isinstance(t, (int, float)) and not isinstance(t, bool) for t in raw)
        ):
            raise fail("raw_times must be a non-empty list of numbers")
        if not all(math.isfinite(t) and t >= 0 for t in raw):
            raise fail("raw_times must be finite and non-negative")
        spec = data.get("task_spec")
        if not isinstance(spec, dict):
            raise fail(f"task_spec must be an object, got {type(spec).__name__}")
        unknown = set(spec) - set(TASK_SPEC_FIELDS)
        missing = {"stmt", "setup"} - set(spec)
        if unknown or missing:
            raise fail(f"task_spec has unknown fields {sorted(unknown)} / lacks {sorted(missing)}")
        for key in ("stmt", "setup", "global_setup"):
            if key in spec and not isinstance(spec[key], str):
                raise fail(f"task_spec.{key} must be a string, got {spec[key]!r}")
        for key in ("label", "sub_label", "description", "env"):
            if spec.get(key) is not None and not isinstance(spec[key], str):
                raise fail(f"task_spec.{key} must be a string or null, got {spec[key]!r}")
        threads = spec.get("num_threads", 1)
        if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
            raise fail(f"task_spec.num_threads must be a positive integer, got {threads!r}")
        metadata = data.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            raise fail(f"metadata must be an object or null, got {type(metadata).__name__}")
        return cls(number, [float(t) for t in raw], TaskSpec(**spec), metadata)
