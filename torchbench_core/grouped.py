"""Grouped benchmark definitions: define a cluster once, derive its variants.

The instruction-count suite's API (TimerArgs, GroupedSetup, GroupedStmts,
GroupedModules, GroupedVariants, parse_stmts, materialize). From a statement
and a signature such as "f(x, w) -> y" we derive eager and TorchScript
variants (and, beyond torch, torch.compile), each forward-only or
forward+backward, in Python, C++ or both, as torch's suite does; a definition
file written for torch's suite loads unchanged.

Differences from torch's suite: Python TorchScript models are compiled from
source strings in setup (torch.jit.CompilationUnit), so no temporary Python
files are imported; the C++ TorchScript cases load the same model saved once
into the C++ cache (torchbench_core.cpp.cache_dir), under a name that is a hash
of its source, so every process and every run finds the same file.
"""

from __future__ import annotations

import dataclasses
import enum
import io
import itertools
import re
import textwrap
from pathlib import Path
from typing import Any, Iterable, Iterator, Union

from .task_spec import Language


@dataclasses.dataclass(frozen=True)
class TimerArgs:
    """Everything a worker needs to build a Timer; plain data, JSON-serialisable."""

    stmt: str
    setup: str = "pass"
    global_setup: str = ""
    num_threads: int = 1
    language: str = "python"  # "python" or "cpp"; torch's Language and its aliases are accepted
    compiled: bool = False  # torch.compile: counted by wall time only (see runner)

    def __post_init__(self) -> None:
        language = Language.parse(self.language)
        object.__setattr__(self, "language", "cpp" if language is Language.CPP else "python")
        if not isinstance(self.num_threads, int) or self.num_threads < 1:
            raise ValueError(f"TimerArgs: num_threads must be a positive integer, got {self.num_threads!r}")
        if self.global_setup and language is not Language.CPP:
            raise ValueError("TimerArgs: global_setup is C++ only")
        if self.compiled and language is Language.CPP:
            raise ValueError("TimerArgs: torch.compile (compiled=True) is Python only")

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


PYTHON, CPP = "Python", "C++"  # AutoLabels.language, as torch's CI keys spell it


@dataclasses.dataclass(frozen=True)
class GroupedSetup:
    py_setup: str = ""
    cpp_setup: str = ""
    global_setup: str = ""  # C++ only: #includes and declarations at file scope

    def __post_init__(self) -> None:
        for field in ("py_setup", "cpp_setup", "global_setup"):
            object.__setattr__(self, field, _dedent(getattr(self, field)))


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
    cpp_fwd_stmt: str | None
    py_model_setup: str | None
    cpp_model_setup: str | None
    setup: GroupedSetup
    signature_args: tuple[str, ...] | None
    signature_output: str | None
    torchscript: bool
    autograd: bool
    torch_compile: bool
    num_threads: tuple[int, ...]

    def __post_init__(self) -> None:
        if self.py_fwd_stmt is None and self.cpp_fwd_stmt is None:
            raise ValueError("a grouped benchmark needs a Python or a C++ statement (or model)")
        if self.autograd and self.signature_output is None:
            raise ValueError("autograd=True needs a signature with an output ('f(x) -> y')")
        if (self.torchscript or self.torch_compile) and self.signature_args is None:
            raise ValueError("torchscript/torch_compile variants need a signature ('f(x) -> y')")
        if (self.torchscript or self.torch_compile) and self.py_model_setup is None:
            raise ValueError("torchscript/torch_compile variants are derived from the Python statement or model")
        if self.py_model_setup is not None and "model" not in self.py_model_setup:
            raise ValueError("py_model_setup must define `model`")
        if self.cpp_model_setup is not None and "model" not in self.cpp_model_setup:
            raise ValueError("cpp_model_setup must define `model`")

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
        if py_stmt is None and cpp_stmt is None:
            raise ValueError("GroupedStmts needs py_stmt, cpp_stmt or both")
        args, output = parse_signature(signature) if signature else (None, None)
        py_stmt = None if py_stmt is None else _dedent(py_stmt)
        cpp_stmt = None if cpp_stmt is None else _dedent(cpp_stmt)
        model_setup = None
        if py_stmt is not None and args is not None and (torchscript or torch_compile):
            body = textwrap.indent(py_stmt + (f"\nreturn {output}" if output else ""), "    ")
            model_setup = f"def model({', '.join(args)}):\n{body}"
        return cls(py_stmt, cpp_stmt, model_setup, None, setup, args, output, torchscript, autograd,
                   torch_compile, _threads(num_threads))

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
        if py_model_setup is None and cpp_model_setup is None:
            raise ValueError("GroupedModules needs py_model_setup, cpp_model_setup or both")
        args, output = parse_signature(signature)
        py_stmt, cpp_stmt = _model_call(args, output, RuntimeMode.EAGER)
        return cls(py_stmt if py_model_setup is not None else None,
                   cpp_stmt if cpp_model_setup is not None else None,
                   None if py_model_setup is None else _dedent(py_model_setup),
                   None if cpp_model_setup is None else _dedent(cpp_model_setup),
                   setup, args, output, torchscript, autograd, torch_compile, _threads(num_threads))

    def model_is_source(self) -> bool:
        """True when the model came from a statement (a `def`), not a module."""
        return self.py_model_setup is not None and self.py_model_setup.startswith("def model(")


def _model_call(args: tuple[str, ...], output: str | None, runtime: "RuntimeMode") -> tuple[str, str]:
    """The (Python, C++) call of a model, as torch's suite writes them: C++ calls `forward` (there is no
    __call__), and a TorchScript model takes a vector of IValues."""
    model = "model" if runtime is RuntimeMode.EAGER else "jit_model"
    py = f"{output} = " if output else ""
    cpp = f"auto {output} = " if output else ""
    if runtime is RuntimeMode.EAGER:
        return f"{py}{model}({', '.join(args)})", f"{cpp}model->forward({', '.join(args)});"
    inputs = ", ".join(f"torch::jit::IValue({a})" for a in args)
    return (f"{py}{model}({', '.join(args)})",
            f"std::vector<torch::jit::IValue> ivalue_inputs({{{inputs}}});\n{cpp}jit_model.forward(ivalue_inputs);")


def _threads(num_threads: int | tuple[int, ...]) -> tuple[int, ...]:
    return (num_threads,) if isinstance(num_threads, int) else tuple(num_threads)


GroupedStmts = GroupedBenchmark.init_from_stmts
GroupedModules = GroupedBenchmark.init_from_model


@dataclasses.dataclass(frozen=True)
class GroupedVariants:
    """Blocks with `# @label` (Python) and `// @label` (C++) sections; every line is one benchmark.

    As in torch's suite: a `@setup` section is shared setup (and in C++ a `@global_setup` section goes at
    file scope); Python and C++ lines of a section are paired by position (a comment line keeps its place),
    so a side-by-side table (parse_stmts) pairs each Python line with the C++ line beside it; lines of a
    section with several are labelled (label, "Case: i"). No signature, so no derived variants.
    """

    py_block: str = ""
    cpp_block: str = ""
    num_threads: int | tuple[int, ...] = 1
    cases: tuple[tuple[tuple[str, ...], str | None, str | None], ...] = dataclasses.field(init=False)
    setup: GroupedSetup = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        py_sections, py_setup, py_global = _sections(self.py_block, "#")
        cpp_sections, cpp_setup, cpp_global = _sections(self.cpp_block, "//")
        if py_global:
            raise ValueError("GroupedVariants: '# @global_setup' is C++ only (a '// @global_setup' section)")
        cases = []
        for label in dict.fromkeys([*py_sections, *cpp_sections]):
            py_lines, cpp_lines = py_sections.get(label, []), cpp_sections.get(label, [])
            pairs = [(py or None, cpp or None) for py, cpp in itertools.zip_longest(py_lines, cpp_lines,
                                                                                    fillvalue="")
                     if py or cpp]
            if not pairs:
                raise ValueError(f"GroupedVariants: section '@{label}' has no statements")
            for i, (py, cpp) in enumerate(pairs):
                cases.append(((label,) if len(pairs) == 1 else (label, f"Case: {i}"), py, cpp))
        object.__setattr__(self, "cases", tuple(cases))
        object.__setattr__(self, "setup", GroupedSetup(py_setup, cpp_setup, cpp_global))
        object.__setattr__(self, "num_threads", _threads(self.num_threads))

    @classmethod
    def from_block(
        cls, py_block: str = "", cpp_block: str = "", num_threads: int | tuple[int, ...] = 1
    ) -> "GroupedVariants":
        return cls(py_block, cpp_block, num_threads)


def _sections(block: str, comment: str) -> tuple[dict[str, list[str]], str, str]:
    """A block's sections by label, each line kept in place ("" for a comment or a blank line), and its
    setup and global setup."""
    sections: dict[str, list[str]] = {}
    current: str | None = None
    for line in _dedent(block).splitlines():
        marker = re.match(rf"^\s*{re.escape(comment)}\s*@(.+)$", line)
        if marker:
            current = marker.group(1).strip()
            if current in sections:
                raise ValueError(f"GroupedVariants: section '@{current}' appears twice")
            sections[current] = []
        elif line.strip().startswith(comment) or not line.strip():
            if current is not None:
                sections[current].append("")
        elif current is None:
            raise ValueError(f"GroupedVariants: line {line.strip()!r} is outside any '{comment} @label' section")
        else:
            sections[current].append(line.strip())
    special = {k.lower().replace(" ", "_"): k for k in sections}
    setup = "\n".join(ln for ln in sections.pop(special["setup"], []) if ln) if "setup" in special else ""
    global_setup = ("\n".join(ln for ln in sections.pop(special["global_setup"]) if ln)
                    if "global_setup" in special else "")
    return sections, setup, global_setup


def parse_stmts(stmts: str) -> tuple[str, str]:
    """torch's side-by-side table of Python and C++ lines -> (Python block, C++ block).

    The format is torch's own, and as strict: a header `Python<35 spaces>| C++`, a rule of dashes, then
    lines whose Python column is exactly 40 characters, then " | ", then the C++ column.
    """
    lines = _dedent(stmts).strip().splitlines()
    if len(lines) < 3:
        raise ValueError(f"parse_stmts: a header, a rule and at least one line are needed:\n{stmts}")
    if not re.search(r"^Python\s{35}\| C\+\+(\s*)$", lines[0]):
        raise ValueError(f"parse_stmts: the header {lines[0]!r} is not 'Python' padded to 40 columns, then '| C++'")
    if not re.search(r"^-{40} \| -{40}$", lines[1]):
        raise ValueError(f"parse_stmts: the second line {lines[1]!r} is not a rule of 40 dashes, ' | ', 40 dashes")
    py_lines, cpp_lines = [], []
    for n, line in enumerate(lines[2:], start=3):
        match = re.search(r"^(.{40}) \|($| (.*)$)", line)
        if match is None:
            raise ValueError(f"parse_stmts: line {n} {line!r} has no ' | ' after a 40-character Python column")
        py_lines.append(match.group(1))
        cpp_lines.append(match.group(3) or "")
    return "\n".join(py_lines), "\n".join(cpp_lines)


def iter_parsed_lines(stmts: str) -> Iterator[tuple[str, str]]:
    """A side-by-side table (parse_stmts) line by line: (Python, C++) pairs, trailing spaces removed (torch's
    definitions build one benchmark per pair, as its "Indexing" group does)."""
    py_block, cpp_block = parse_stmts(stmts)
    py_lines = [line.rstrip() for line in py_block.splitlines()]
    cpp_lines = [line.rstrip() for line in cpp_block.splitlines()]
    return zip(py_lines, cpp_lines, strict=True)


Definition = Union[TimerArgs, GroupedBenchmark, GroupedVariants]
Definitions = dict[Any, Any]  # nested: str / tuple-of-str / None keys -> Definition or Definitions
FlatIntermediateDefinition = dict[tuple[str, ...], Definition]  # flatten's result, as torch's core.types names it

_JIT_WARMUP_CALLS = 3  # as torch's suite: let the profiling executor settle


def flatten(definitions: Definitions, prefix: tuple[str, ...] = ()) -> FlatIntermediateDefinition:
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
    """(stmt, setup) of one Python variant."""
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


_CPP_JIT_INCLUDES = "#include <string>\n#include <vector>\n#include <torch/script.h>"


def _cpp_variant(bench: GroupedBenchmark, runtime: RuntimeMode, autograd: AutogradMode) -> tuple[str, str, str]:
    """(stmt, setup, global_setup) of one C++ variant, as torch's suite writes them."""
    setup = [bench.setup.cpp_setup]
    global_setup = bench.setup.global_setup
    if runtime is RuntimeMode.EAGER:
        setup.append(bench.cpp_model_setup or "")
        stmt = bench.cpp_fwd_stmt
        backward = f"{bench.signature_output}.backward();"
    else:
        _, stmt = _model_call(bench.signature_args or (), bench.signature_output, RuntimeMode.JIT)
        path = saved_torchscript(bench)
        setup.append(f'const std::string fpath = "{path}";\nauto jit_model = torch::jit::load(fpath);\n'
                     f"// warm-up: TorchScript's profiling runs stay out of the measurement\n"
                     f"for (int i = 0; i < {_JIT_WARMUP_CALLS}; i++) {{\n{textwrap.indent(stmt, '    ')}\n}}")
        if not set(_CPP_JIT_INCLUDES.splitlines()) <= set(global_setup.splitlines()):  # not there already
            global_setup = "\n".join(s for s in (global_setup, _CPP_JIT_INCLUDES) if s)
        backward = f"{bench.signature_output}.toTensor().backward();"
    if autograd is AutogradMode.FORWARD_BACKWARD:
        stmt += f"\n{backward}"
    return stmt, "\n".join(s for s in setup if s), global_setup


def saved_torchscript(bench: GroupedBenchmark) -> Path:
    """The benchmark's Python model, scripted and saved for C++ to load (torch::jit::load): once per
    distinct model source, in the C++ cache, written whole or not at all."""
    import hashlib

    import torch

    from .cpp import cache_dir
    from .storage import atomic_write_bytes

    source = bench.py_model_setup or ""
    digest = hashlib.sha256(f"{torch.__version__}\0{source}".encode()).hexdigest()[:20]
    path = cache_dir() / "models" / f"model_{digest}.pt"
    if not path.exists():
        namespace: dict[str, Any] = {"torch": torch}
        if bench.model_is_source():
            scripted = torch.jit.CompilationUnit(source + "\n").model
        else:
            exec(compile(source, "<py_model_setup>", "exec"), namespace)
            scripted = torch.jit.script(namespace["model"])
        buffer = io.BytesIO()
        torch.jit.save(scripted, buffer)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, buffer.getvalue())
    return path


FlatDefinition = tuple[tuple[tuple[str, ...], AutoLabels, TimerArgs], ...]


def materialize(definitions: Definitions | dict[tuple[str, ...], Definition]) -> FlatDefinition:
    """Every concrete case: (label, auto labels, TimerArgs), in definition order (Python before C++ in each
    variant). C++ TorchScript cases save their model on first use (saved_torchscript)."""
    flat = flatten(definitions)
    out: list[tuple[tuple[str, ...], AutoLabels, TimerArgs]] = []
    explicit = (RuntimeMode.EXPLICIT, AutogradMode.EXPLICIT)
    for label, definition in flat.items():
        if isinstance(definition, TimerArgs):
            out.append((label, AutoLabels(*explicit, CPP if definition.language == "cpp" else PYTHON), definition))
        elif isinstance(definition, GroupedVariants):
            for (sub, py, cpp), n in itertools.product(definition.cases, definition.num_threads):
                setup = definition.setup
                if py is not None:
                    out.append((label + sub, AutoLabels(*explicit), TimerArgs(py, setup.py_setup or "pass",
                                                                              num_threads=n)))
                if cpp is not None:
                    out.append((label + sub, AutoLabels(*explicit, CPP), TimerArgs(
                        cpp, setup.cpp_setup, setup.global_setup, num_threads=n, language="cpp")))
        elif isinstance(definition, GroupedBenchmark):
            runtimes = [RuntimeMode.EAGER]
            runtimes += [RuntimeMode.JIT] if definition.torchscript else []
            runtimes += [RuntimeMode.COMPILE] if definition.torch_compile else []
            autograds = [AutogradMode.FORWARD] + ([AutogradMode.FORWARD_BACKWARD] if definition.autograd else [])
            for runtime, autograd, n in itertools.product(runtimes, autograds, definition.num_threads):
                if definition.py_fwd_stmt is not None:
                    stmt, setup = _variant(definition, runtime, autograd)
                    out.append((label, AutoLabels(runtime, autograd), TimerArgs(
                        stmt, setup, num_threads=n, compiled=runtime is RuntimeMode.COMPILE)))
                if definition.cpp_fwd_stmt is not None and runtime is not RuntimeMode.COMPILE:
                    stmt, setup, global_setup = _cpp_variant(definition, runtime, autograd)
                    out.append((label, AutoLabels(runtime, autograd, CPP), TimerArgs(
                        stmt, setup, global_setup, num_threads=n, language="cpp")))
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
