"""C++ statements for Timer(language="cpp"): compiled against the installed torch, cached on disk.

A program holds one or more cases (stmt and setup, sharing a global_setup), pasted into a template (below)
and built with torch.utils.cpp_extension, as torch's Timer builds its own, against the headers and libraries
of the torch this process imported. A program serves both halves of a Timer:

- timing: ``program --serve --case K --number-threads T`` runs case K's setup once, then reads a block size
  per line on stdin and answers with that block's seconds (stdout is the statement's own; answers go to a
  saved copy of it, so a statement that prints cannot garble them);
- counting: ``program --number N --number-warmup W --repeats R --number-threads T`` (torch's arguments),
  optionally ``--cases K,L`` and ``--baseline``, under callgrind: collection is toggled on around each
  repeat's loop only, and the program says on stdout which case each dump belongs to. Valgrind starts it
  uninstrumented, and the program switches instrumentation on before its first count (loading libtorch
  uninstrumented: 4 s instead of 11 s a valgrind process here).

torch builds two artefacts per statement (a Python module to time, an executable to count) into a
temporary folder, so every process compiles again: 81 s for one statement here. One executable, kept in a
cache keyed by a hash of its source, the compiler and the torch build, costs ~19 s once; and many
statements share one compile (parsing torch's headers is most of it), so a suite's C++ half compiles in
about the time of one statement. A build runs in a folder of its own and the executable is renamed into the
cache when complete: an interrupted build leaves nothing a later one would trust (cpp_extension's own lock
file, in a shared build folder, would make every later build wait forever).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any, Sequence

from .processes import describe_exit
from .task_spec import Language

__all__ = ["CppSource", "CppCase", "CppToolchainError", "CppCompileError", "CppStatementError", "build",
           "build_many", "compile_cpp", "CppProcess", "cache_dir"]

# A program holds one or more cases (statements sharing one global_setup): one compile parses torch's
# headers, the costly part, for them all. Each case is a function: its setup, then its statement pasted
# once, inside `run_block`, a lambda over setup's locals, so timing and counting run the same machine code.
# `#line` directives make the compiler's messages name the user's own lines ("stmt:1:12: error: ...").
HEADER = r"""
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <unistd.h>

#include <callgrind.h>
#include <torch/torch.h>

#line 1 "global_setup"
// GLOBAL_SETUP

#line @ "torchbench_timer.cpp"
struct Options {
  bool serve = false;
  long number = 100, warmup = 10, repeats = 1;
  FILE* answers = nullptr;  // serve: the original stdout (the statement's own output goes to stderr)
};

// The baseline's loop: a function of its own, so that its counts are not main's (callgrind_annotate's rows
// that equal a dump's total are the frames below the toggled region, and are dropped).
__attribute__((noinline)) static void empty_block(long number) {
  for (long loop_idx = 0; loop_idx < number; ++loop_idx) {
    asm volatile("" ::: "memory");
  }
}

template <typename Block>
static void drive(const Options& o, int case_id, Block&& run_block) {
  if (o.serve) {
    std::fprintf(o.answers, "ready\n");
    std::fflush(o.answers);
    long number;
    while (std::cin >> number) {
      auto start = std::chrono::steady_clock::now();
      run_block(number);
      auto end = std::chrono::steady_clock::now();
      std::fprintf(o.answers, "%.17g\n", std::chrono::duration<double>(end - start).count());
      std::fflush(o.answers);
    }
    return;
  }
  // counting: valgrind starts uninstrumented (loading libtorch ~3x faster); on from here, and it stays on
  CALLGRIND_START_INSTRUMENTATION;
  run_block(o.warmup);
  for (long repeat = 0; repeat < o.repeats; ++repeat) {
    CALLGRIND_TOGGLE_COLLECT;
    run_block(o.number);
    CALLGRIND_TOGGLE_COLLECT;
    CALLGRIND_DUMP_STATS;
    std::printf("dump %d %ld\n", case_id, repeat);
    std::fflush(stdout);
  }
}
"""

CASE = r"""
static int case_@ID(const Options& o) {
  const char* stage = "setup";
  try {
#line 1 "setup"
    // SETUP
#line @ "torchbench_timer.cpp"
    stage = "stmt";
    auto run_block = [&](long number) {
      for (long loop_idx = 0; loop_idx < number; ++loop_idx) {
#line 1 "stmt"
        // STMT
#line @ "torchbench_timer.cpp"
      }
    };
    drive(o, @ID, run_block);
  } catch (const std::exception& e) {
    // torch's errors carry a C++ backtrace after the message: the message is what the user needs
    const c10::Error* torch_error = dynamic_cast<const c10::Error*>(&e);
    std::fprintf(stderr, "torchbench: case @ID: the C++ %s raised: %s\n", stage,
                 torch_error ? torch_error->what_without_backtrace() : e.what());
    if (!o.serve) std::printf("error @ID the C++ %s raised an exception\n", stage);
    std::fflush(stdout);
    return 3;
  }
  std::printf("done @ID\n");
  std::fflush(stdout);
  return 0;
}
"""

MAIN = r"""
static long arg(int argc, char** argv, const char* name, long fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::stol(argv[i + 1]);
  }
  return fallback;
}

static bool flag(int argc, char** argv, const char* name) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return true;
  }
  return false;
}

// serve:   --serve --case K --number-threads T
// count:   --number N --number-warmup W --repeats R --number-threads T [--cases K,L,...] [--baseline]
//          (torch's arguments; every case by default), writing "dump K r" after each dump, "done K" or
//          "error K ..." after each case on stdout
int main(int argc, char* argv[]) {
  static int (*const cases[])(const Options&) = {@CASES};
  const int n_cases = static_cast<int>(sizeof(cases) / sizeof(cases[0]));
  Options o;
  o.serve = flag(argc, argv, "--serve");
  if (o.serve) {
    o.answers = fdopen(dup(1), "w");
    dup2(2, 1);
  }
  torch::set_num_threads(static_cast<int>(arg(argc, argv, "--number-threads", 1)));
  o.number = arg(argc, argv, "--number", 100);
  o.warmup = arg(argc, argv, "--number-warmup", arg(argc, argv, "--number_warmup", 10));
  o.repeats = arg(argc, argv, "--repeats", 1);
  if (o.serve) {
    const long k = arg(argc, argv, "--case", 0);
    if (k < 0 || k >= n_cases) return 2;
    return cases[k](o);
  }
  std::string wanted;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--cases") == 0) wanted = argv[i + 1];
  }
  int status = 0;
  if (wanted.empty()) {
    for (int k = 0; k < n_cases; ++k) status |= cases[k](o);
  } else {
    size_t at = 0;
    while (at < wanted.size()) {
      size_t comma = wanted.find(',', at);
      if (comma == std::string::npos) comma = wanted.size();
      const long k = std::stol(wanted.substr(at, comma - at));
      if (k < 0 || k >= n_cases) return 2;
      status |= cases[k](o);
      at = comma + 1;
    }
  }
  if (flag(argc, argv, "--baseline")) {
    CALLGRIND_START_INSTRUMENTATION;
    empty_block(o.warmup);
    CALLGRIND_TOGGLE_COLLECT;
    empty_block(o.number);
    CALLGRIND_TOGGLE_COLLECT;
    CALLGRIND_DUMP_STATS;
    std::printf("baseline\n");
  }
  return status;
}
"""


def render(sources: "Sequence[CppSource]") -> str:
    """The C++ file of a program whose case K is sources[K]; every source has the same global_setup."""
    global_setups = {s.global_setup for s in sources}
    if len(global_setups) != 1:
        raise ValueError("the cases of one C++ program share one global_setup")
    text = HEADER.replace("// GLOBAL_SETUP", global_setups.pop(), 1)
    for k, source in enumerate(sources):
        suffix = "" if len(sources) == 1 else f"[{k}]"  # "stmt:1:5: error" alone; "stmt[3]:1:5" in a batch
        text += (CASE.replace("@ID", str(k)).replace('#line 1 "setup"', f'#line 1 "setup{suffix}"')
                 .replace('#line 1 "stmt"', f'#line 1 "stmt{suffix}"')
                 .replace("// SETUP", source.setup, 1).replace("// STMT", source.stmt, 1))
    text += MAIN.replace("@CASES", ", ".join(f"case_{k}" for k in range(len(sources))))
    lines = text.splitlines()
    for i, line in enumerate(lines):  # back on the program's own lines, numbered as written
        if line.strip() == '#line @ "torchbench_timer.cpp"':
            lines[i] = line.replace("@", str(i + 2))
    return "\n".join(lines) + "\n"


_CFLAGS = ("-O2",)  # torch's Timer compiles with -O2 as well (its -g and warnings left out: 2x the build time)


class CppToolchainError(RuntimeError):
    """No C++ compiler or no ninja: C++ statements cannot be built here. The message says what to install."""


class CppCompileError(ValueError):
    """The statement does not compile; the message holds the compiler's errors, on the user's own lines.
    `cases`: the cases of a program that the errors name (empty where they name none)."""

    def __init__(self, message: str, cases: frozenset[int] = frozenset()) -> None:
        super().__init__(message)
        self.cases = cases


class CppStatementError(RuntimeError):
    """The compiled statement failed when run (a C++ exception in setup or stmt, or a crash)."""


@dataclasses.dataclass(frozen=True)
class CppSource:
    stmt: str
    setup: str = ""
    global_setup: str = ""


@dataclasses.dataclass(frozen=True)
class CppCase:
    """Case `index` of the compiled `program`."""

    program: Path
    index: int


def cache_dir() -> Path:
    """$TORCHBENCH_CPP_CACHE, else $XDG_CACHE_HOME/torchbench/cpp (~/.cache/torchbench/cpp)."""
    explicit = os.environ.get("TORCHBENCH_CPP_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "torchbench" / "cpp"


def _compiler() -> str:
    return os.environ.get("CXX", "c++")  # what torch.utils.cpp_extension runs


@functools.lru_cache(maxsize=None)
def _toolchain_identity(compiler: str) -> str:
    """The compiler's version line, checked once; and ninja present. Else a CppToolchainError saying what to do."""
    from torch.utils import cpp_extension

    path = shutil.which(compiler)
    if path is None:
        raise CppToolchainError(
            f"C++ statements need a C++ compiler, and {compiler!r} was not found (set CXX to name another). "
            "On Debian or Ubuntu: `apt-get install g++`."
        )
    try:
        cpp_extension.verify_ninja_availability()
    except RuntimeError:
        raise CppToolchainError(
            "C++ statements are built with ninja (as torch.utils.cpp_extension builds them), and ninja was not "
            "found: `pip install ninja` (or `apt-get install ninja-build`)."
        ) from None
    version = subprocess.run([path, "--version"], capture_output=True, text=True).stdout.splitlines()
    return f"{path}: {version[0] if version else '?'}"


def _key(text: str, identity: str) -> str:
    import torch

    parts = [text, identity, torch.__version__, os.path.dirname(torch.__file__), *_CFLAGS]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:20]


# A library of one function for the Python valgrind worker: Python cannot issue valgrind's client requests
# (they are a magic instruction sequence), and torch binds only collection's toggle, not instrumentation's.
_SWITCH_SOURCE = """#include <callgrind.h>
extern "C" void torchbench_start_instrumentation(void) { CALLGRIND_START_INSTRUMENTATION; }
"""


def instrumentation_switch() -> Path | None:
    """A shared library whose `torchbench_start_instrumentation()` turns callgrind's instrumentation on, so
    that a valgrind process can start uninstrumented (`--instr-atstart=no`) and import Python and torch about
    5x faster, then count as before. Built once (about a second; no torch headers) into the C++ cache; None
    where it cannot be built (no compiler), and the worker then runs instrumented from the start."""
    compiler = shutil.which(_compiler())
    if compiler is None:
        return None
    try:
        headers = _valgrind_headers()
    except ImportError:
        return None
    digest = hashlib.sha256("\0".join([_SWITCH_SOURCE, compiler, headers]).encode()).hexdigest()[:20]
    path = cache_dir() / f"instrumentation_switch_{digest}.so"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent, prefix=".switch-") as tmp:
        source, built = Path(tmp) / "switch.cpp", Path(tmp) / "switch.so"
        source.write_text(_SWITCH_SOURCE)
        proc = subprocess.run([compiler, "-O1", "-shared", "-fPIC", f"-I{headers}", str(source), "-o", str(built)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            return None
        os.replace(built, path)  # whole or not at all: another process may be loading it
    return path


def _valgrind_headers() -> str:
    """torch ships valgrind's callgrind.h beside its own Timer (what its C++ counting includes)."""
    import torch.utils.benchmark.utils.valgrind_wrapper as wrapper

    return os.path.dirname(wrapper.__file__)


# an error on the user's own lines: "stmt:1:5: error", "setup[3]:2:1: error", "global_setup:1:10: fatal error"
_WHERE = re.compile(r"^(?:stmt|setup|global_setup)(?:\[(\d+)\])?:\d+(?::\d+)?: (?:fatal )?error")


def _compile_errors(log: str) -> tuple[str, set[int]]:
    """The compiler's messages about the user's code, with the lines after each; and the cases they name."""
    lines = log.splitlines()
    keep: list[str] = []
    cases: set[int] = set()
    for i, line in enumerate(lines):
        where = _WHERE.match(line)
        if where:
            keep.extend(lines[i:i + 3])
            if where.group(1) is not None:
                cases.add(int(where.group(1)))
    if not keep:
        keep = [ln for ln in lines if "error" in ln][:20] or lines[-20:]
    return "\n".join(keep), cases


def _compile(sources: Sequence[CppSource], verbose: bool) -> Path:
    """One program for `sources` (one global_setup): from the cache, or compiled into it. Raises
    CppCompileError with the compiler's messages, `cases` naming the failing ones where it can tell."""
    identity = _toolchain_identity(_compiler())
    text = render(sources)
    key = _key(text, identity)
    root = cache_dir()
    program = root / f"timer_{key}"
    if program.exists():
        return program
    root.mkdir(parents=True, exist_ok=True)
    from torch.utils import cpp_extension

    with tempfile.TemporaryDirectory(prefix=f".build_{key}_", dir=root) as work:
        src = Path(work) / "torchbench_timer.cpp"
        src.write_text(text)
        try:
            built = cpp_extension.load(
                name=f"timer_{key}", sources=[str(src)], build_directory=work,
                extra_cflags=list(_CFLAGS), extra_include_paths=[_valgrind_headers()],
                is_python_module=False, is_standalone=True, verbose=verbose,
            )
        except RuntimeError as e:
            messages, cases = _compile_errors(str(e))
            raise CppCompileError(f"the C++ code does not compile:\n{messages}", frozenset(cases)) from None
        os.replace(built, program)  # complete or absent: a later process never runs half a file
    return program


def build(source: CppSource, *, verbose: bool = False) -> CppCase:
    """One statement's program (~19 s to compile here, then cached). Raises CppToolchainError where nothing
    can be compiled, and CppCompileError with the compiler's messages where the code is wrong."""
    (case,) = build_many([source], verbose=verbose)
    if isinstance(case, CppCompileError):
        raise case
    return case


def build_many(sources: Sequence[CppSource], *, verbose: bool = False) -> list[CppCase | CppCompileError]:
    """Programs for many statements: one compile per distinct global_setup, not one per statement (parsing
    torch's headers is most of a compile). A statement that does not compile gets its own CppCompileError,
    and the others are compiled again without it."""
    results: list[CppCase | CppCompileError] = [CppCompileError("not compiled")] * len(sources)
    groups: dict[str, list[int]] = {}
    for i, source in enumerate(sources):
        groups.setdefault(source.global_setup, []).append(i)

    def compile_group(members: list[int]) -> None:
        while members:
            try:
                program = _compile([sources[i] for i in members], verbose)
            except CppCompileError as e:
                # not pinned on a case (a lone statement, global_setup, or the compiler said no more): all fail
                bad = {members[k] for k in e.cases if k < len(members)} or set(members)
                for i in bad:
                    results[i] = CppCompileError(f"{e}\n{_describe(sources[i])}")
                members = [i for i in members if i not in bad]
                continue
            for k, i in enumerate(members):
                results[i] = CppCase(program, k)
            break

    # two compiles at a time: a compile is one process on one core (~1 GB), and this machine has two
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(compile_group, groups.values()))
    return results


def compile_cpp(timers: Sequence[Any]) -> dict[int, CppCompileError]:
    """Compile the C++ statements of many Timers together: one compile per distinct global_setup, not one
    per statement (a suite's C++ half compiles in about the time of one statement). Returns, by position in
    `timers`, the error of each statement that does not compile; the others are ready to time and count.
    (Here, below both timing and callgrind, which use it: a Timer is read for its C++ source and given its
    compiled case.)"""
    cpp = [(i, t) for i, t in enumerate(timers) if t.language is Language.CPP]
    errors = {i: t._cpp_error for i, t in cpp if t._cpp_error is not None}
    pending = [(i, t) for i, t in cpp if not t.cpp_compiled]
    for (i, timer), case in zip(pending, build_many([t._cpp for _, t in pending])):
        if isinstance(case, CppCompileError):
            errors[i] = timer._cpp_error = case
        else:
            timer._cpp_case = case
    return errors


def _describe(source: CppSource) -> str:
    text = f"stmt:\n{_indent(source.stmt)}\nsetup:\n{_indent(source.setup)}"
    return text + (f"\nglobal_setup:\n{_indent(source.global_setup)}" if source.global_setup else "")


def _indent(code: str) -> str:
    return "\n".join("    " + line for line in (code or "(empty)").splitlines())


class CppProcess:
    """A compiled statement serving timed blocks: setup runs once at start, then `block(n)` times n runs."""

    def __init__(self, case: CppCase, num_threads: int = 1) -> None:
        self._stderr = tempfile.TemporaryFile()
        self._proc = subprocess.Popen(
            [str(case.program), "--serve", "--case", str(case.index), "--number-threads", str(num_threads)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, text=True, bufsize=1,
        )
        self._expect("ready", "setup")

    def _expect(self, wanted: str | None, what: str) -> str:
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline().strip()
        if not line or (wanted is not None and line != wanted):
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            why = self._tail()
            self.close()
            raise CppStatementError(f"the C++ statement's process failed in {what}:\n{why}")
        return line

    def _tail(self) -> str:
        self._stderr.seek(0)
        text = self._stderr.read().decode(errors="replace")
        ours = [line for line in text.splitlines() if line.startswith("torchbench: ")]
        text = "\n".join(ours) if ours else text[-2000:].strip()
        how = describe_exit(self._proc.returncode)
        return f"{text}\n({how})" if text else f"({how})"

    def block(self, number: int) -> float:
        stdin: IO[str] | None = self._proc.stdin
        assert stdin is not None
        try:
            stdin.write(f"{number}\n")
            stdin.flush()
        except BrokenPipeError:
            pass  # the process ended: _expect reports why
        return float(self._expect(None, "stmt"))

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                assert self._proc.stdin is not None
                self._proc.stdin.close()
            except BrokenPipeError:
                pass
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._stderr.close()

    def __enter__(self) -> "CppProcess":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
