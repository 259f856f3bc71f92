"""Grouped benchmark definitions: define a cluster once, derive its variants.

The instruction-count suite's API (TimerArgs, GroupedSetup, GroupedStmts,
GroupedModules, GroupedVariants, materialize). From a statement and a
signature such as "f(x, w) -> y" we derive eager and TorchScript variants
(and, beyond torch, torch.compile), each forward-only or forward+backward.

Differences from torch's suite: TorchScript models are compiled from source
strings in setup (torch.jit.CompilationUnit), so no temporary files or saved
artefacts are needed; C++ statements are rejected at definition time because
torchbench_core has no C++ timing harness.
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
import re
import textwrap
from typing import Any, Iterable, Union


@dataclasses.dataclass(frozen=True)
class TimerArgs:
    """Everything a worker needs to build a Timer; plain data, JSON-serialisable."""

    stmt: str
    setup: str = "pass"
    global_setup: str = ""
    num_threads: int = 1
    language: str = "python"
    compiled: bool = False  # torch.compile: counted by wall time only (see runner)

    def __post_init__(self) -> None:
        if self.language != "python":
            raise ValueError(f"TimerArgs: only language='python' is supported, got {self.language!r}")
        if not isinstance(self.num_threads, int) or self.num_threads < 1:
            raise ValueError(f"TimerArgs: num_threads must be a positive integer, got {self.num_threads!r}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TimerArgs":
        return cls(**data)


class RuntimeMode(enum.Enum):
    EAGER = "Eager"
    JIT = "TorchScript"
    COMPILE = "torch.compile"
    EXPLICIT = ""


class AutogradMode(enum.Enum):
    FORWARD = "Forward"
    FORWARD_BACKWARD = "Forward + Backward"
    EXPLICIT = ""


@dataclasses.dataclass(frozen=True)
class AutoLabels:
    runtime: RuntimeMode
    autograd: AutogradMode
    language: str = "Python"

    @property
    def as_dict(self) -> dict[str, str]:
        return {"runtime": self.runtime.value, "autograd": self.autograd.value, "language": self.language}


def _dedent(src: str) -> str:
    src = textwrap.dedent(src)
    return (src[1:] if src.startswith("\n") else src).rstrip()


def _reject_cpp(**sources: str | None) -> None:
    given = [name for name, src in sources.items() if src]
    if given:
        raise ValueError(
            f"C++ benchmark sources are not supported ({', '.join(given)}): torchbench_core "
            "times Python statements only. Drop the C++ parts, or time them through a Python binding."
        )


@dataclasses.dataclass(frozen=True)
class GroupedSetup:
    py_setup: str = ""
    cpp_setup: str = ""
    global_setup: str = ""

    def __post_init__(self) -> None:
        _reject_cpp(cpp_setup=self.cpp_setup, global_setup=self.global_setup)
        object.__setattr__(self, "py_setup", _dedent(self.py_setup))


_SIGNATURE = re.compile(r"^f\((.*)\) -> (.*)$")


def parse_signature(signature: str) -> tuple[tuple[str, ...], str | None]:
    """"f(x, w) -> y" -> (("x", "w"), "y"); "-> None" means no output."""
    match = _SIGNATURE.match(signature.strip())
    if match is None:
        raise ValueError(f"Invalid signature {signature!r}: expected 'f(a, b) -> c'")
    args = tuple(a.strip() for a in match.group(1).split(",") if a.strip())
    output = match.group(2).strip()
    if "," in output:
        raise ValueError(f"Signature {signature!r} has several outputs; only one is supported")
    for name in (*args, output):
        if not name.isidentifier():
            raise ValueError(f"Signature {signature!r}: {name!r} is not an identifier")
    return args, (None if output == "None" else output)


@dataclasses.dataclass(frozen=True)
class GroupedBenchmark:
    """One definition that expands into several TimerArgs (see materialize)."""

    py_fwd_stmt: str | None
    py_model_setup: str | None
    setup: GroupedSetup
    signature_args: tuple[str, ...] | None
    signature_output: str | None
    torchscript: bool
    autograd: bool
    torch_compile: bool
    num_threads: tuple[int, ...]

    def __post_init__(self) -> None:
        if self.autograd and self.signature_output is None:
            raise ValueError("autograd=True needs a signature with an output ('f(x) -> y')")
        if (self.torchscript or self.torch_compile) and self.signature_args is None:
            raise ValueError("torchscript/torch_compile variants need a signature ('f(x) -> y')")
        if self.py_model_setup is not None and "model" not in self.py_model_setup:
            raise ValueError("py_model_setup must define `model`")

    @classmethod
    def init_from_stmts(
        cls,
        py_stmt: str | None = None,
        cpp_stmt: str | None = None,
        setup: GroupedSetup = GroupedSetup(),
        signature: str | None = None,
        torchscript: bool = False,
        autograd: bool = False,
        torch_compile: bool = False,
        num_threads: int | tuple[int, ...] = 1,
    ) -> "GroupedBenchmark":
        _reject_cpp(cpp_stmt=cpp_stmt)
        if py_stmt is None:
            raise ValueError("GroupedStmts needs py_stmt")
        args, output = parse_signature(signature) if signature else (None, None)
        py_stmt = _dedent(py_stmt)
        model_setup = None
        if args is not None and (torchscript or torch_compile):
            body = textwrap.indent(py_stmt + (f"\nreturn {output}" if output else ""), "    ")
            model_setup = f"def model({', '.join(args)}):\n{body}"
        return cls(py_stmt, model_setup, setup, args, output, torchscript, autograd, torch_compile,
                   _threads(num_threads))

    @classmethod
    def init_from_model(
        cls,
        py_model_setup: str | None = None,
        cpp_model_setup: str | None = None,
        setup: GroupedSetup = GroupedSetup(),
        signature: str = "f(x) -> y",
        torchscript: bool = False,
        autograd: bool = False,
        torch_compile: bool = False,
        num_threads: int | tuple[int, ...] = 1,
    ) -> "GroupedBenchmark":
        _reject_cpp(cpp_model_setup=cpp_model_setup)
        if py_model_setup is None:
            raise ValueError("GroupedModules needs py_model_setup")
        args, output = parse_signature(signature)
        call = f"model({', '.join(args)})"
        stmt = f"{output} = {call}" if output else call
        return cls(stmt, _dedent(py_model_setup), setup, args, output, torchscript, autograd, torch_compile,
                   _threads(num_threads))

    def model_is_source(self) -> bool:
        """True when the model came from a statement (a `def`), not a module."""
        return self.py_model_setup is not None and self.py_model_setup.startswith("def model(")


def _threads(num_threads: int | tuple[int, ...]) -> tuple[int, ...]:
    return (num_threads,) if isinstance(num_threads, int) else tuple(num_threads)


GroupedStmts = GroupedBenchmark.init_from_stmts
GroupedModules = GroupedBenchmark.init_from_model


@dataclasses.dataclass(frozen=True)
class GroupedVariants:
    """A block with `# @label` sections; every non-empty line is one benchmark.

    A `# @setup` section is shared setup. Lines of a section with several
    lines are labelled (label, "Case: i"). No signature, so no derived variants.
    """

    cases: tuple[tuple[tuple[str, ...], str], ...]
    setup: str
    num_threads: tuple[int, ...]

    @classmethod
    def from_block(
        cls, py_block: str = "", cpp_block: str = "", num_threads: int | tuple[int, ...] = 1
    ) -> "GroupedVariants":
        _reject_cpp(cpp_block=cpp_block)
        sections: dict[str, list[str]] = {}
        current: str | None = None
        for line in _dedent(py_block).splitlines():
            marker = re.match(r"^\s*#\s*@(.+)$", line)
            if marker:
                current = marker.group(1).strip()
                if current in sections:
                    raise ValueError(f"GroupedVariants: section '@{current}' appears twice")
                sections[current] = []
            elif line.strip().startswith("#") or not line.strip():
                continue
            elif current is None:
                raise ValueError(f"GroupedVariants: line {line.strip()!r} is outside any '# @label' section")
            else:
                sections[current].append(line.strip())
        setup_key = next((k for k in sections if k.lower().replace(" ", "") == "setup"), None)
        setup = "\n".join(sections.pop(setup_key)) if setup_key else ""
        cases = []
        for label, lines in sections.items():
            if not lines:
                raise ValueError(f"GroupedVariants: section '@{label}' has no statements")
            for i, stmt in enumerate(lines):
                cases.append(((label,) if len(lines) == 1 else (label, f"Case: {i}"), stmt))
        return cls(tuple(cases), setup, _threads(num_threads))


Definition = Union[TimerArgs, GroupedBenchmark, GroupedVariants]
Definitions = dict[Any, Any]  # nested: str / tuple-of-str / None keys -> Definition or Definitions

_JIT_WARMUP_CALLS = 3  # as torch's suite: let the profiling executor settle


def flatten(definitions: Definitions, prefix: tuple[str, ...] = ()) -> dict[tuple[str, ...], Definition]:
    """Nested definition dicts -> {label tuple: definition}; duplicate labels are an error."""
    flat: dict[tuple[str, ...], Definition] = {}
    for key, value in definitions.items():
        label = prefix + (() if key is None else (key,) if isinstance(key, str) else tuple(key))
        children = flatten(value, label) if isinstance(value, dict) else {label: value}
        for child_label, child in children.items():
            if child_label in flat:
                raise ValueError(f"Duplicate benchmark label {child_label}")
            flat[child_label] = child
    return flat


def _variant(bench: GroupedBenchmark, runtime: RuntimeMode, autograd: AutogradMode) -> tuple[str, str]:
    """(stmt, setup) of one variant."""
    args = ", ".join(bench.signature_args or ())
    setup = [bench.setup.py_setup]
    if runtime is RuntimeMode.EAGER:
        if bench.py_model_setup and not bench.model_is_source():
            setup.append(bench.py_model_setup)
        stmt = bench.py_fwd_stmt
    else:
        model = "jit_model" if runtime is RuntimeMode.JIT else "compiled_model"
        if bench.model_is_source():
            if runtime is RuntimeMode.JIT:
                # TorchScript's parser wants the source to end with a newline.
                setup.append(f"jit_model = torch.jit.CompilationUnit({bench.py_model_setup + chr(10)!r}).model")
            else:
                setup.append(bench.py_model_setup)
                setup.append("compiled_model = torch.compile(model)")
        else:
            setup.append(bench.py_model_setup)
            wrap = "torch.jit.script" if runtime is RuntimeMode.JIT else "torch.compile"
            setup.append(f"{model} = {wrap}(model)")
        call = f"{model}({args})"
        # Warm-up in setup: TorchScript's profiling runs and torch.compile's
        # compilation must not land in the measurement.
        setup.append(f"for _ in range({_JIT_WARMUP_CALLS}):\n    {call}")
        stmt = f"{bench.signature_output} = {call}" if bench.signature_output else call
    if autograd is AutogradMode.FORWARD_BACKWARD:
        stmt += f"\n{bench.signature_output}.backward()"
    return stmt, "\n".join(s for s in setup if s) or "pass"


FlatDefinition = tuple[tuple[tuple[str, ...], AutoLabels, TimerArgs], ...]


def materialize(definitions: Definitions | dict[tuple[str, ...], Definition]) -> FlatDefinition:
    """Every concrete case: (label, auto labels, TimerArgs), in definition order."""
    flat = flatten(definitions)
    out: list[tuple[tuple[str, ...], AutoLabels, TimerArgs]] = []
    for label, definition in flat.items():
        if isinstance(definition, TimerArgs):
            out.append((label, AutoLabels(RuntimeMode.EXPLICIT, AutogradMode.EXPLICIT), definition))
        elif isinstance(definition, GroupedVariants):
            for (sub, stmt), n in itertools.product(definition.cases, definition.num_threads):
                out.append((label + sub, AutoLabels(RuntimeMode.EXPLICIT, AutogradMode.EXPLICIT),
                            TimerArgs(stmt, definition.setup or "pass", num_threads=n)))
        elif isinstance(definition, GroupedBenchmark):
            runtimes = [RuntimeMode.EAGER]
            runtimes += [RuntimeMode.JIT] if definition.torchscript else []
            runtimes += [RuntimeMode.COMPILE] if definition.torch_compile else []
            autograds = [AutogradMode.FORWARD] + ([AutogradMode.FORWARD_BACKWARD] if definition.autograd else [])
            for runtime, autograd, n in itertools.product(runtimes, autograds, definition.num_threads):
                stmt, setup = _variant(definition, runtime, autograd)
                out.append((label, AutoLabels(runtime, autograd), TimerArgs(
                    stmt, setup, num_threads=n, compiled=runtime is RuntimeMode.COMPILE)))
        else:
            raise TypeError(f"{label}: not a benchmark definition: {type(definition).__name__}")
    return tuple(out)


def case_key(label: tuple[str, ...], auto: AutoLabels, args: TimerArgs) -> str:
    """Stable identity of a case in result files (torch's WorkOrder string, as JSON)."""
    import json

    return json.dumps({"label": list(label), "autolabels": auto.as_dict, "num_threads": args.num_threads},
                      sort_keys=True)


def definitions_version(keys: Iterable[str]) -> str:
    """md5 over the sorted case keys: a result file says which suite produced it."""
    import hashlib

    return hashlib.md5("\n".join(sorted(keys)).encode()).hexdigest()
