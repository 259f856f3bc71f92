"""The operator-input log format of PyTorch's operatorbench, read and written.

A log lists, for each aten operator overload a model called, the distinct
inputs it was called with and how often::

    Operator: aten.add.Tensor
    cnt: 73, ((T([64, 128, 768], f16), T([64, 128, 768], f16)), {})
    cnt: 1, ((T([768, 64], f32, stride=(1, 768)), 1, False), {'dtype': f16})

``T(size, dtype[, stride=...])`` is a dense tensor (the stride only where it is
not contiguous), ``ST(...)`` a sparse one; dtypes are abbreviated (f16, i64,
b8...); ``th.X``/``torch.X`` name torch constants (layouts, memory formats).
This module turns that text into :class:`TensorSpec` trees and back; building
tensors from them is ``inputs``' job.

PyTorch's own loader evaluates each line with ``eval``; a log is data, so this
one parses it with ``ast`` and accepts only the format's own forms (literals,
tuples, lists, dicts, the names above and ``T``/``ST`` calls), raising
:class:`LogFormatError` with the file and line otherwise. Nothing in torch or
the standard library reads this format safely, hence the small evaluator here.
"""

from __future__ import annotations

import ast
import dataclasses
import math
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Iterator

__all__ = ["DTYPE_ABBREVIATIONS", "LogFormatError", "OperatorLog", "SparseSpec", "TensorSpec", "format_sample",
           "parse_sample"]

# torch dtype name -> the format's abbreviation (PyTorch's operator_inp_utils uses the same)
DTYPE_ABBREVIATIONS = {
    "bfloat16": "bf16", "float64": "f64", "float32": "f32", "float16": "f16", "complex32": "c32",
    "complex64": "c64", "complex128": "c128", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "bool": "b8", "uint8": "u8",
}
_DTYPE_NAMES = {abbr: name for name, abbr in DTYPE_ABBREVIATIONS.items()}
# PyTorch's logs name the overload that dynamic shapes once gave sum: its loader renames it so
_RENAMED = {"aten.sum.SymInt": "aten.sum.dim_IntList"}


class LogFormatError(ValueError):
    """A line that is not in the operator-input format (the message names the file and line)."""


@dataclasses.dataclass(frozen=True)
class TensorSpec:
    """``T(size, dtype, stride=...)``: a dense tensor's shape, dtype (torch name) and stride (None: contiguous)."""
    size: tuple[int, ...]
    dtype: str
    stride: tuple[int, ...] | None = None

    def __repr__(self) -> str:
        stride = "" if self.stride is None else f", stride={tuple(self.stride)!r}"
        return f"T({list(self.size)!r}, {DTYPE_ABBREVIATIONS[self.dtype]}{stride})"


@dataclasses.dataclass(frozen=True)
class SparseSpec:
    """``ST(size, dtype, layout, is_coalesced[, nnz])``: a sparse tensor (kept so that its sample can be skipped
    with its reason)."""
    size: tuple[int, ...]
    dtype: str
    layout: str
    is_coalesced: bool
    nnz: int | None = None

    def __repr__(self) -> str:
        nnz = "" if self.nnz is None else f", {self.nnz}"
        return (f"ST({list(self.size)!r}, {DTYPE_ABBREVIATIONS[self.dtype]}, torch.{self.layout}, "
                f"{self.is_coalesced}{nnz})")


@dataclasses.dataclass(frozen=True)
class TorchConstant:
    """``th.X`` or ``torch.X`` (a layout, memory format or dtype spelled out): resolved by the builder."""
    name: str

    def __repr__(self) -> str:
        return f"torch.{self.name}"


@dataclasses.dataclass(frozen=True)
class DtypeArg:
    """A dtype passed as an argument (``{'dtype': f16}``), as opposed to a tensor's own dtype."""
    name: str

    def __repr__(self) -> str:
        return DTYPE_ABBREVIATIONS[self.name]


_NAMES = {"None": None, "True": True, "False": False, "inf": math.inf, "nan": math.nan}


def _evaluate(node: ast.AST) -> Any:
    match node:
        case ast.Constant(value=value):
            return value
        case ast.Tuple(elts=elts):
            return tuple(_evaluate(e) for e in elts)
        case ast.List(elts=elts):
            return [_evaluate(e) for e in elts]
        case ast.Dict(keys=keys, values=values) if all(k is not None for k in keys):
            return {_evaluate(k): _evaluate(v) for k, v in zip(keys, values)}
        case ast.UnaryOp(op=ast.USub(), operand=operand):
            value = _evaluate(operand)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return -value
        case ast.Name(id=name) if name in _NAMES:
            return _NAMES[name]
        case ast.Name(id=name) if name in _DTYPE_NAMES:
            return DtypeArg(_DTYPE_NAMES[name])
        case ast.Attribute(value=ast.Name(id="th" | "torch"), attr=attr):
            return DtypeArg(attr) if attr in DTYPE_ABBREVIATIONS else TorchConstant(attr)
        case ast.Call(func=ast.Name(id="T" | "ST" as kind), args=args, keywords=keywords):
            values = [_evaluate(a) for a in args]
            options = {k.arg: _evaluate(k.value) for k in keywords}
            return _tensor(kind, values, options)
    raise ValueError(f"unexpected {ast.unparse(node)!r}")


def _tensor(kind: str, values: list, options: dict) -> TensorSpec | SparseSpec:
    if len(values) < 2 or not isinstance(values[0], list) or not isinstance(values[1], DtypeArg):
        raise ValueError(f"{kind}() takes a size list and a dtype, got {values!r}")
    size = tuple(int(s) for s in values[0])
    dtype = values[1].name
    if kind == "T":
        if len(values) > 2 or set(options) - {"stride"}:
            raise ValueError(f"T() takes size, dtype and stride=, got {values!r} {options!r}")
        stride = options.get("stride")
        if stride is not None and len(stride) != len(size):
            raise ValueError(f"T({list(size)}): stride {stride!r} has {len(stride)} entries for {len(size)} sizes")
        return TensorSpec(size, dtype, None if stride is None else tuple(int(s) for s in stride))
    layout, coalesced, *nnz = values[2:] + [None] * (4 - len(values))
    return SparseSpec(size, dtype, layout.name if isinstance(layout, TorchConstant) else str(layout),
                      bool(coalesced), nnz[0] if nnz else None)


def parse_sample(text: str) -> tuple[tuple, dict]:
    """One sample's text, ``((args...), {kwargs})``, as (args, kwargs) with TensorSpec leaves. ValueError if it
    is not in the format."""
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as e:
        raise ValueError(f"not a Python expression: {e.msg}") from None
    value = _evaluate(tree)
    if not (isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], tuple)
            and isinstance(value[1], dict)):
        raise ValueError("expected ((args...), {kwargs})")
    return value


def format_sample(args: tuple, kwargs: dict) -> str:
    """The text ``parse_sample`` reads back: PyTorch's spelling (``T([64, 128], f16)``, ``{'dtype': f16}``)."""
    return repr((tuple(args), dict(kwargs)))


class OperatorLog:
    """Operator overload name -> Counter of sample text -> calls: one log file, or several merged.

    ``OperatorLog.read(path)`` reads a file or every ``*.txt`` of a folder (sorted, so the order of samples is
    the same on every machine). Samples keep their first-seen order; the counts add up across files.
    """

    def __init__(self, operators: dict[str, Counter] | None = None, sources: Iterable[Path] = ()) -> None:
        self.operators: dict[str, Counter] = operators if operators is not None else {}
        self.sources = list(sources)

    @classmethod
    def read(cls, *paths: str | Path) -> "OperatorLog":
        log = cls()
        for path in map(Path, paths):
            files = sorted(path.glob("*.txt")) if path.is_dir() else [path]
            if not files:
                raise FileNotFoundError(f"{path}: no operator-input logs (*.txt) in this folder")
            for file in files:
                log.merge(cls._read_file(file))
        return log

    @classmethod
    def _read_file(cls, path: Path) -> "OperatorLog":
        operators: dict[str, Counter] = {}
        current: Counter | None = None
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                line = line.rstrip("\n")
                if not line.strip():
                    continue
                if line.startswith("Operator: "):
                    name = line[len("Operator: "):].strip()
                    current = operators.setdefault(_RENAMED.get(name, name), Counter())
                    continue
                count, sep, sample = line.partition(", ")
                if current is None or not count.startswith("cnt: ") or not sep:
                    raise LogFormatError(f"{path}:{number}: expected 'Operator: <overload>' or "
                                         f"'cnt: <n>, <inputs>', got {line[:80]!r}")
                try:
                    current[sample.strip().strip("'")] += int(count[len("cnt: "):])
                except ValueError:
                    raise LogFormatError(f"{path}:{number}: the count {count[5:]!r} is not an integer") from None
        return cls(operators, [path])

    def merge(self, other: "OperatorLog") -> None:
        for name, samples in other.operators.items():
            self.operators.setdefault(name, Counter()).update(samples)
        self.sources.extend(other.sources)

    def names(self) -> list[str]:
        return list(self.operators)

    def samples(self, name: str) -> list[tuple[str, int]]:
        """(sample text, calls) of one operator, in the log's order."""
        if name not in self.operators:
            raise KeyError(f"{name} is not in the logs ({', '.join(map(str, self.sources)) or 'none read'}); "
                           f"name an overload, such as aten.add.Tensor")
        return list(self.operators[name].items())

    def calls(self, name: str) -> int:
        return sum(self.operators[name].values())

    def write(self, path: str | Path) -> None:
        """The log in PyTorch's layout: operators sorted, samples in order. Written to a temporary file and
        renamed, so that an interrupted write leaves the old file."""
        path = Path(path)
        lines = []
        for name in sorted(self.operators):
            lines.append(f"Operator: {name}")
            lines.extend(f"cnt: {count}, {sample}" for sample, count in self.operators[name].items())
        partial = path.with_name(path.name + ".partial")
        partial.write_text("\n".join(lines) + "\n", encoding="utf-8")
        partial.replace(path)

    def __iter__(self) -> Iterator[str]:
        return iter(self.operators)

    def __len__(self) -> int:
        return len(self.operators)
