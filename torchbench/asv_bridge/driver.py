"""The one place that starts asv (and pip inside asv's environments).

asv runs as a subprocess where it must: `asv run` builds commits and spawns
benchmark processes, and a subprocess is what a Ctrl-C or a kill can stop
without taking our report with it. Every step is timed, its exit status
checked, and a failing step raises UserError naming the step.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator
from pathlib import Path

from torchbench_core.storage import atomic_write_text

from .. import resources
from ..errors import UserError
from ..project.config import Project, base_config
from torchbench_core.skips import skipped_here

__all__ = ["MACHINE_COMMAND", "Asv", "Environment", "PipIndex", "Timings", "end_group", "harness_env", "install_env",
           "machine_file", "machine_name", "write_machine_file"]


@dataclass
class Timings:
    """Wall time per named step, in the order the steps first ran."""

    steps: dict[str, float] = field(default_factory=dict)

    def add(self, name: str, seconds: float) -> None:
        self.steps[name] = self.steps.get(name, 0.0) + seconds


def install_env(install: Path) -> dict[str, str]:
    """The environment of a process that imports a commit installed into its own folder (Workspace.install).
    PYTHONSAFEPATH: `python -m` would put the current folder first on the path, and run from inside the tracked
    repository (its default), the working tree's package would shadow the commit's install on both sides."""
    return dict(harness_env(), PYTHONPATH=str(install), PYTHONSAFEPATH="1")


def harness_env() -> dict[str, str]:
    """The environment asv runs in: our harness (the torchbench_core package folder) named for the suites
    (see benchmarks/__init__.py)."""
    return dict(os.environ, TORCHBENCH_HARNESS=str(resources.harness()), PYTHONUNBUFFERED="1")


@dataclass(frozen=True)
class PipIndex:
    """Where the environments' packages come from: pip's own options, passed through to every pip that asv
    and we run (as PIP_INDEX_URL and PIP_EXTRA_INDEX_URL), e.g. a CPU wheel index for torch."""

    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()

    def env(self) -> dict[str, str]:
        out = {}
        if self.index_url:
            out["PIP_INDEX_URL"] = self.index_url
        if self.extra_index_urls:
            out["PIP_EXTRA_INDEX_URL"] = " ".join(self.extra_index_urls)
        return out


@dataclass(frozen=True)
class Environment:
    """One asv environment of the run: its name, interpreter, torch release and size on disk."""

    name: str
    python: Path
    torch: str
    path: Path

    def disk_bytes(self) -> int:
        total = 0
        for folder, _, files in os.walk(self.path):
            for name in files:
                try:
                    total += os.lstat(os.path.join(folder, name)).st_size
                except OSError:
                    continue
        return total


# asv 0.6.6's `setup` returns its list of environments, which asv's main hands to sys.exit: printed, as
# "[<asv.plugins.virtualenv.Virtualenv object at 0x7f...>]", on stderr
SETUP_RETURN = re.compile(r"^\[<asv\.plugins\.[\w.]+ object at 0x[0-9a-f]+>(, <[^>]+>)*\]\s*$")


# asv's console: a benchmark's stderr is a line "[ 8.33%] ···· ..." and the lines indented under it
_STDERR_BLOCK = re.compile(r"^\[\s*\d+(\.\d+)?%\] ·{4} ")


def without_skip_tracebacks(lines: Iterable[str]) -> Iterator[str]:
    """asv's output with each traceback of a row this machine cannot run (a "cuda" parameter without a CUDA
    device, a matrix package that could not be installed here: torchbench_core.skips) told in one line: the
    report lists the row skipped, with its reason, and the outcome records keep its stderr. Any other traceback
    is shown whole."""
    block: list[str] = []

    def told() -> list[str]:
        why = skipped_here("".join(block)) if block else ""
        if not why:
            return block
        head = block[0][:block[0].index("····") + 4]
        lead = [] if block[0][len(head):].strip().startswith("Traceback") else [block[0]]  # "For parameters: .."
        return lead + [f"{head} {why} (its traceback is in the outcome record)\n"]

    for line in lines:
        if _STDERR_BLOCK.match(line):
            yield from told()
            block = [line]
        elif block and line.startswith(" "):
            block.append(line)
        else:
            yield from told()
            block = []
            yield line
    yield from told()


def _descendants(pid: int) -> list[int]:
    """The processes PID started, and theirs, read from /proc (asv starts pip in a session of its own, out of
    reach of a signal to PID's process group). Written here: psutil is not among torchbench's dependencies."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for kid in children.get(todo.pop(), []):
            found.append(kid)
            todo.append(kid)
    return found


def end_group(child: subprocess.Popen, grace: float = 10.0) -> None:
    """End CHILD and every process it started (its process group, start_new_session, and any descendant that
    left it): SIGTERM, then SIGKILL after GRACE seconds."""
    others = _descendants(child.pid)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in others:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, sig)
        try:
            child.wait(grace)
        except subprocess.TimeoutExpired:
            continue
        others = [pid for pid in others if Path(f"/proc/{pid}").exists()]
        if not others:
            return
        time.sleep(min(grace, 2.0))  # the descendants' own exit, before the next signal


class Asv:
    def __init__(self, conf_path: Path, timings: Timings, keep_fds: tuple[int, ...] = (),
                 pip: PipIndex = PipIndex()):
        self.conf_path = conf_path
        self.timings = timings
        self.env = {**harness_env(), **pip.env()}
        self.keep_fds = keep_fds  # the run's locks: asv holds them too while it runs (see project/lock.py)
        self.environments: list[Environment] = []  # set by `setup`

    def _run(self, step: str, cmd: list[str], *, check: bool = True,
             shown: Callable[[Iterable[str]], Iterable[str]] | None = None, **kwargs) -> subprocess.CompletedProcess:
        """Run one step's command, its output relayed (through SHOWN, which may leave lines out)."""
        print(f"\n== {step}: {' '.join(cmd)}", flush=True)
        start = time.perf_counter()
        try:
            # the child's output is relayed line by line through our stdout, not inherited: when its reader goes
            # (`torchbench publish | head`), cli.ClosedPipeSafe absorbs it here and the child finishes its work
            # (asv's own BrokenPipeError would stop `asv publish` half-way, with a traceback)
            # (and in a process group of its own, which an interrupt or a failure here ends whole: asv's pip
            # installing torch would otherwise go on, orphaned, holding the folder's lock for minutes)
            with subprocess.Popen(cmd, env=self.env, pass_fds=self.keep_fds, stdout=subprocess.PIPE, text=True,
                                  errors="replace", bufsize=1, start_new_session=True, **kwargs) as child:
                try:
                    for line in (shown or iter)(child.stdout):
                        sys.stdout.write(line)
                        sys.stdout.flush()
                except BaseException:
                    end_group(child)
                    raise
            proc = subprocess.CompletedProcess(cmd, child.returncode)
        finally:
            self.timings.add(step, time.perf_counter() - start)
        if check and proc.returncode != 0:
            raise UserError(f"{step} failed (exit status {proc.returncode}): {' '.join(cmd)}")
        return proc

    def asv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "asv", *args, "--config", str(self.conf_path)]

    def ensure_machine(self) -> None:
        write_machine_file()

    def setup(self, env_dir: Path) -> list[Path]:
        """Build the managed environments (only those asv finds absent); return their interpreters."""
        from asv.config import Config
        from asv.environment import get_environments

        envs = list(get_environments(Config.load(str(self.conf_path)), None, verbose=False))
        if any(not env.check_presence() for env in envs):
            # asv 0.6.6's `setup` exits 1 on success (it returns its list of
            # environments as the status), so presence is the check.
            self._run("environment build", self.asv("setup"), check=False, stderr=subprocess.STDOUT,
                      shown=lambda lines: (line for line in lines if not SETUP_RETURN.match(line)))
        absent = [env.name for env in envs if not env.check_presence()]
        if absent or not envs:
            raise UserError(f"asv setup did not create the environment(s) {', '.join(absent) or '(none configured)'} "
                            f"under {env_dir}; see its output above")
        python_of = {env.name: Path(env.find_executable("python")) for env in envs}
        # an environment's folder is its interpreter's grandparent (ENV/bin/python)
        self.environments = [Environment(env.name, python_of[env.name], str(env.requirements.get("torch", "")),
                                         python_of[env.name].parent.parent) for env in envs]
        return [e.python for e in self.environments]

    def prepare(self, pythons: list[Path], project: Project) -> None:
        """What asv's matrix cannot say: the project's build backend and
        dependencies (with their version ranges), and our harness."""
        torch_of = {e.python: e.torch for e in self.environments}
        requirements = project.build_requires + project.dependencies
        for python in pythons:
            torch_pin = f"torch=={torch_of.get(python) or self._matrix_torch()}"
            link_harness(python)
            # pip takes ~2 s even when all is installed: remember what it installed
            done = python.parent.parent / ".torchbench-requirements"
            wanted = "\n".join([torch_pin, *requirements])
            if not requirements or (done.exists() and done.read_text() == wanted):
                continue
            with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
                f.write(torch_pin + "\n")  # a dependency on torch must not pull another build
            try:
                self._run("build backend and dependencies",
                          [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                           "-c", f.name, *requirements])
            finally:
                os.unlink(f.name)
            done.write_text(wanted)

    def _matrix_torch(self) -> str:
        return base_config()["matrix"]["req"]["torch"]

    def run(self, revisions: list[str], *, benchmarks: list[str], quick: bool, existing: Path | None = None,
            set_commit_hash: str | None = None, skip_existing: bool = True, rounds: int = 1) -> int:
        """`asv run` over the given commits; returns asv's exit status (2: some benchmark failed).

        rounds: processes per benchmark and commit (asv's `rounds` attribute: round after round over the
        whole suite, so the processes of one benchmark are spread over the run's time; their samples are
        kept together in the one result)."""
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("\n".join(revisions) + "\n")
        if existing is None:
            args = ["run", f"HASHFILE:{f.name}"]
        else:  # the build in `existing` is measured and filed under the commit it was built from
            args = ["run", "--environment", f"existing:{existing}", "--set-commit-hash", set_commit_hash]
        args += ["--record-samples", "--show-stderr"]
        for regex in benchmarks:
            args += ["-b", regex]
        if rounds != 1 and not quick:
            args += ["-a", f"rounds={rounds}"]
        if quick:
            args += ["--quick", "--dry-run"]  # asv saves --quick results otherwise
        elif skip_existing:
            args += ["--skip-existing"]
        try:
            proc = self._run("benchmarks", self.asv(*args), check=False, shown=without_skip_tracebacks)
        finally:
            os.unlink(f.name)
        if proc.returncode not in (0, 2):
            unmatched = self._unmatched(benchmarks)
            if unmatched:
                raise UserError(unmatched)
            raise UserError(f"asv run failed (exit status {proc.returncode}); see its output above")
        return proc.returncode

    def _unmatched(self, patterns: list[str]) -> str | None:
        """Where -b matches no benchmark of the suite (asv discovered them all into benchmarks.json, then
        selected none and exited 1), the one line that says so; else None."""
        if not patterns:
            return None
        try:
            conf = json.loads(self.conf_path.read_text())
            names = [k for k in json.loads((Path(conf["results_dir"]) / "benchmarks.json").read_text())
                     if k != "version"]
        except (OSError, ValueError, KeyError):
            return None
        if not names or any(re.search(p, n) for p in patterns for n in names):
            return None
        shown = ", ".join(sorted(names)[:5]) + (", ..." if len(names) > 5 else "")
        return (f"-b {' -b '.join(patterns)} matches no benchmark of the suite ({len(names)} benchmarks: "
                f"{shown})")

    def publish(self) -> None:
        self._run("publish", self.asv("publish"))


# asv's own description of this machine; asv wants a configuration with it (--config), from any folder.
# It prints asv's questionnaire with its answers: write_machine_file does the same without a word.
MACHINE_COMMAND = [sys.executable, "-m", "asv", "machine", "--yes"]


def write_machine_file() -> Path:
    """asv's machine file with asv's own answers (Machine.get_defaults, what `asv machine --yes` takes), where
    there is none: a fresh machine, whose first `asv run` would otherwise stop to ask (or print its questions)."""
    from asv.machine import Machine, MachineCollection

    path = machine_file()
    if not path.exists():
        answers = Machine.get_defaults()
        MachineCollection.save(answers["machine"], answers)
    return path


def machine_name() -> str:
    """The name asv files this machine's results under (its machine file's, asv's default where it has none)."""
    from asv.machine import Machine

    return Machine.load(interactive=False, use_defaults=True).machine


def machine_file() -> Path:
    """asv's machine file (~/.asv-machine.json): a fresh machine has none, and asv would stop to ask."""
    from asv.machine import MachineCollection

    return Path(MachineCollection.get_machine_file_path())


def link_harness(python: Path) -> None:
    """Make torchbench_core importable in an asv environment: a symlink to this installation's package in a
    folder of the environment's own, put on its path by a .pth file.

    Suites import it (torchbench_core.asv_suite); the environment holds the
    tracked project, not ours. A link to this tree's package, rather than a
    copy or a .pth file for the whole tree, keeps the harness identical across
    the history and puts nothing else of ours on the path. The link is never
    in site-packages itself: a project that ships its own torchbench_core
    (torchbench measuring its own history) is installed there by pip, and pip
    would write, then uninstall, its files through such a link into the
    harness, that is into the user's checkout. In site-packages that copy comes
    first on the path (.pth folders follow it): benchmarks/__init__ decides.
    """
    out = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True)
    purelib = Path(out.stdout.strip())
    old = purelib / "torchbench_core"
    if old.is_symlink():  # an earlier version linked it here
        old.unlink()
    folder = python.parent.parent / "torchbench-harness"
    folder.mkdir(exist_ok=True)
    link, target = folder / "torchbench_core", resources.harness()
    if not (link.is_symlink() and link.resolve() == target):
        if link.is_symlink():
            link.unlink()
        link.symlink_to(target, target_is_directory=True)
    pth = purelib / "torchbench-harness.pth"
    if not pth.exists() or pth.read_text().strip() != str(folder):
        atomic_write_text(pth, f"{folder}\n")


def python_can_import(python: Path, *modules: str) -> list[str]:
    """The modules that `python` cannot import."""
    missing = []
    for module in modules:
        proc = subprocess.run([str(python), "-c", f"import {module}"], capture_output=True, text=True,
                              env=dict(os.environ, PYTHONPATH=""))
        if proc.returncode != 0:
            missing.append(module)
    return missing



def _build_commands(commands: list[str], python: Path, src: Path,
                    wheels: str) -> subprocess.CompletedProcess | None:
    """The user's asv build_command, run as asv runs it (asv's interpolation: {build_dir}, {build_cache_dir},
    {env_dir}...; in-dir= and return-code= prefixes; `python` the environment's) into WHEELS; the first failure
    or None."""
    from asv.util import interpolate_command

    env_dir = python.parent.parent
    env = dict(harness_env(), PATH=f"{python.parent}{os.pathsep}{os.environ.get('PATH', '')}",
               VIRTUAL_ENV=str(env_dir))
    names = {"build_dir": str(src), "build_cache_dir": wheels, "env_dir": str(env_dir), "conf_dir": str(src),
             "commit": "", "env_name": env_dir.name}
    for command in commands if isinstance(commands, list) else [commands]:
        cmd, extra, codes, cwd = interpolate_command(command, names)
        proc = subprocess.run(cmd, cwd=cwd or src, capture_output=True, text=True, env={**env, **extra})
        if codes is not None and proc.returncode not in codes:
            return proc
    return None


def install_commit(python: Path, src: Path, target: Path, build_command: list[str] | None = None) -> str | None:
    """Build the project in `src` with `python`'s build backend (or the user's asv `build_command`, which
    leaves a wheel in {build_cache_dir}) and install it into `target` (not the environment's site-packages), so
    two commits can live side by side. Returns None, or why it failed."""
    pip = [str(python), "-m", "pip"]
    quiet = ["-q", "--disable-pip-version-check", "--no-deps"]
    with tempfile.TemporaryDirectory() as wheels:
        proc = _build_commands(build_command, python, src, wheels) if build_command else None
        if proc is None and not any(Path(wheels).glob("*.whl")):
            proc = subprocess.run(pip + ["wheel", *quiet, "--no-build-isolation", "-w", wheels, str(src)],
                                  capture_output=True, text=True, env=harness_env())
        elif proc is None:
            proc = subprocess.CompletedProcess([], 0, "", "")
        if proc.returncode == 0:
            proc = subprocess.run(pip + ["install", *quiet, "--target", str(target),
                                         *map(str, Path(wheels).glob("*.whl"))],
                                  capture_output=True, text=True, env=harness_env())
    if proc.returncode != 0:
        lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
        step = f"pip {proc.args[3]}" if len(proc.args) > 3 and proc.args[1:3] == ["-m", "pip"] else " ".join(proc.args)
        return f"{step} failed (exit status {proc.returncode}): {' | '.join(lines[-3:])}"
    return None
