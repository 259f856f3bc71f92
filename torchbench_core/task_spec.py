"""What was measured: the frozen, hashable description of a benchmark.

Kept apart from the numbers (Measurement) so that replicates can be merged
and tables grouped by identity alone, as in torch.utils.benchmark.
"""

from __future__ import annotations

import dataclasses
import enum
import textwrap
from typing import Any


class Language(enum.Enum):
    PYTHON = 0
    CPP = 1

    @classmethod
    def parse(cls, value: "Language | str") -> "Language":
        if isinstance(value, Language):
            return value
        aliases = {"py": cls.PYTHON, "python": cls.PYTHON, "cpp": cls.CPP, "c++": cls.CPP}
        try:
            return aliases[str(value).lower()]
        except KeyError:
            raise ValueError(
                f"Unknown language {value!r}: expected one of {sorted(aliases)} or a Language"
            ) from None


@dataclasses.dataclass(frozen=True, repr=False)
class TaskSpec:
    """Everything that identifies a measurement except its globals."""

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """Best-effort one-line name: label[: sub_label], else the stmt."""
        suffix = f": {self.sub_label}" if self.sub_label else ""
        if self.label is not None:
            return self.label + suffix
        if "\n" not in self.stmt:
            return self.stmt + suffix
        sub = f" ({self.sub_label})" if self.sub_label else ""
        return f"stmt:{sub}\n{textwrap.indent(self.stmt, '  ')}"

    def setup_str(self) -> str:
        if self.setup in ("", "pass"):
            return ""
        if "\n" in self.setup:
            return f"setup:\n{textwrap.indent(self.setup, '  ')}"
        return f"setup: {self.setup}"

    def summarize(self) -> str:
        """The task part of a Measurement's repr (torch's format)."""
        sections = [self.title, self.description or "", self.setup_str()]
        return "\n".join(f"{s}\n" if "\n" in s else s for s in sections if s)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


TASK_SPEC_FIELDS = tuple(f.name for f in dataclasses.fields(TaskSpec))
