"""`torchbench profile`: where a benchmark spends its time, at each commit, as flame graphs.

A timing says that a benchmark got slower; a profile says where. For each
commit of the range, installed into the asv environment beside the others
(Workspace.site), each selected benchmark case runs in a loop while py-spy
samples it with native frames, so torch's C++ dispatch shows under the
Python call. Kept per commit, benchmark and case, outside the published site
(flamegraph.py: OUT/profiles/<sha>/<benchmark>/<index>.svg|.collapsed|.json);
the publisher compares two commits' profiles as a differential flame graph.

How one commit is recorded, and why:

  * One benchmark process per commit (torchbench_core.asv_worker profile)
    imports and lists the suite, is given the cases to record, and runs them
    in turn, each for --seconds in a loop frame renamed per case; one py-spy
    recording of that process is split by those frames into one profile per
    case. A process (and a py-spy attach) per case, or a separate process to
    list the suite, would each cost 2-3 s more (interpreter and torch
    start-up, py-spy reading libtorch's symbols) for the same samples.
  * py-spy attaches (--pid) once the process has imported the suite and
    waits: sampling torch's import with native stacks takes seconds and
    would swamp the benchmark. Nothing is attached when every case already
    has a profile.
  * One recording, in py-spy's raw format (collapsed stacks); the SVG is drawn
    from those same stacks (flamegraph.render_svg). py-spy writes one format
    per recording, so an SVG of its own would need a second recording: twice
    the time, and an SVG of other samples than the .collapsed file beside it.

Exit status: 0 every case recorded (or already there); 2 something failed (a
commit that does not build, a benchmark that raises, py-spy missing or
failing), with the report printed first.
"""

from __future__ import annotations

import ast
import json
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from torchbench_core.storage import atomic_write_text

from .. import tools
from ..asv_bridge.driver import install_env
from ..asv_bridge.worker import WORKER, combinations
from ..asv_bridge.workspace import Workspace, open_workspace
from ..errors import UserError, last_line
from ..project import commits
from ..project.folders import Folders
from ..validate import POSITIVE, POSITIVE_WHOLE, check_all
from .flamegraph import location, parse_collapsed, render_svg

__all__ = ["Case", "CommitProfiles", "ProfileOptions", "profile_cases", "profile_history", "render_report",
           "select_cases"]

DEFAULT_SECONDS = 1.0
# py-spy's default is 100 Hz; at 1 s a case that gives ~100 samples, thin for a flame graph.
# 200 Hz is still light for py-spy attached by --pid (no child to reap, so no "No child process"
# error, which shows up at high rates when py-spy runs the program itself).
DEFAULT_RATE = 200
OVERHEAD_LABEL = "__torch_function__"
MARKER_NAME = "torchbench_profile"  # the loop frame's name in the stored stacks (asv_worker renames it per case)
READY_TIMEOUT = 600.0  # importing a suite (and torch)
ATTACH_TIMEOUT = 60.0  # py-spy reading the process's symbols
CASE_TIMEOUT = 600.0  # a case's setup (setup_cache included) and teardown, on top of --seconds
NO_PYSPY = ("py-spy is not installed (no `py-spy` beside this Python or on PATH), so no profile can be recorded; "
            "install it with `pip install py-spy` (it ships the binary)")
PTRACE_HINT = ("py-spy needs to ptrace the benchmark process: run as root or with CAP_SYS_PTRACE (in a container: "
               "--cap-add SYS_PTRACE), or set kernel.yama.ptrace_scope to 1 or 0 (the benchmark process admits "
               "py-spy under 1)")


@dataclass(frozen=True)
class Case:
    """One parameter combination of one benchmark (asv's parameter index), params as asv's repr strings."""

    benchmark: str
    index: int
    params: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def key(self) -> tuple[str, int]:
        return (self.benchmark, self.index)

    @property
    def title(self) -> str:
        shown = ", ".join(_plain(v) for v in self.params.values())
        return f"{self.benchmark} [{self.index}]" + (f" ({shown})" if shown else "")


@dataclass
class CommitProfiles:
    commit: commits.Commit
    recorded: int = 0
    existing: int = 0
    skipped: int = 0
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _plain(value: str) -> str:
    """asv keeps parameters as repr strings ("'Tensor'"); show the value ("Tensor")."""
    try:
        return str(ast.literal_eval(value))
    except (ValueError, SyntaxError):
        return value


@dataclass(frozen=True)
class ProfileOptions:
    """Which cases `profile_history` records, and how."""

    patterns: tuple[str, ...] = ()  # every combination of the benchmarks matching these (default: the overhead cases)
    seconds: float = DEFAULT_SECONDS  # how long each case runs under the profiler
    rate: int = DEFAULT_RATE  # py-spy's samples per second
    rerun: bool = False  # record again the cases that already have a profile
    benchmarks: Path | None = None  # the suite folder (default: REPO/benchmarks, else torchbench's own)

    RULES = {"seconds": POSITIVE, "rate": POSITIVE_WHOLE}

    def __post_init__(self):
        check_all(self)


def select_cases(listing: list[dict], patterns: list[str]) -> list[Case]:
    """With patterns: every parameter combination of the benchmarks whose name matches one. Without:
    the TimerSuite cases whose task-spec label contains "__torch_function__" (the overhead suite)."""
    cases = []
    for b in listing:
        if patterns and not any(re.search(p, b["name"]) for p in patterns):
            continue
        if not patterns and not b.get("timer_suite"):
            continue
        for index, combo in combinations(b):
            params = dict(zip(b["param_names"], combo))
            if not patterns and OVERHEAD_LABEL not in params.get("label", ""):
                continue
            cases.append(Case(b["name"], index, params))
    return cases


def case_stacks(stacks: dict[str, int], marker: str) -> dict[str, int]:
    """The stacks that pass through the case's loop frame, from that frame down (renamed MARKER_NAME,
    so two cases' or two commits' profiles share their root). The frames above it are the worker's."""
    out: dict[str, int] = {}
    for stack, count in stacks.items():
        frames = stack.split(";")
        for i, frame in enumerate(frames):
            if frame.split(" (", 1)[0] == marker:
                key = ";".join([MARKER_NAME + frame[len(marker):], *frames[i + 1:]])
                out[key] = out.get(key, 0) + count
                break
    return out


# -- one process, one recording ------------------------------------------------------------------

@dataclass
class _Recording:
    command: list[str]
    returncode: int | None = None
    output: list[str] = field(default_factory=list)
    stacks: dict[str, int] | None = None  # None: py-spy wrote nothing usable

    def failure(self) -> str:
        text = "".join(self.output)
        why = f"py-spy failed (exit status {self.returncode}): {last_line(text)}"
        if "Permission denied" in text or "Operation not permitted" in text:
            why += f". {PTRACE_HINT}"
        return why

    def counts(self) -> tuple[int | None, int | None]:
        match = re.search(r"Samples: (\d+) Errors: (\d+)", "".join(self.output))
        return (int(match.group(1)), int(match.group(2))) if match else (None, None)


def _stop(proc: subprocess.Popen | None, sig: int = signal.SIGKILL) -> None:
    if proc is not None and proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class _Worker:
    """One benchmark process (asv_worker profile): it imports the suite, lists it, and waits for its jobs."""

    def __init__(self, python: Path, suite: Path, env: dict[str, str], seconds: float, work: Path) -> None:
        self.results, self.log_path = work / "results.jsonl", work / "worker.log"
        self.results.unlink(missing_ok=True)
        (work / "setup-cache").mkdir(exist_ok=True)
        self._log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [str(python), *WORKER, "profile", str(suite), "--out", str(self.results), "--seconds", str(seconds),
             "--cache-dir", str(work / "setup-cache")],
            stdin=subprocess.PIPE, stdout=self._log, stderr=subprocess.STDOUT, env=env, text=True)

    def wait_ready(self, timeout: float) -> list[dict] | None:
        """The suite's listing once the process has imported it; None if it died or took too long."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.results.exists():
                for line in self.results.read_text().split("\n")[:-1]:  # whole lines only
                    if line.startswith('{"ready"'):
                        return json.loads(line)["benchmarks"]
            if self.proc.poll() is not None:
                return None
            time.sleep(0.02)
        _stop(self.proc)
        return None

    def send(self, jobs: list[Case]) -> None:
        try:
            self.proc.stdin.write(json.dumps([list(c.key) for c in jobs]) + "\n" if jobs else "\n")
            self.proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass  # it died: its exit status and log say why

    def why(self) -> str:
        return f"(exit status {self.proc.returncode}): {last_line(self.log_path.read_text())}"

    def outcomes(self) -> dict[tuple[str, int], dict]:
        """Its result per job reached; a job it started and never finished failed with the process."""
        outcomes, started = {}, None
        for line in self.results.read_text().split("\n")[:-1] if self.results.exists() else []:
            record = json.loads(line)
            if "start" in record:
                started = tuple(record["start"])
            elif "job" in record:
                outcomes[tuple(record.pop("job"))] = record
                started = None
        if started is not None:
            outcomes[started] = {"error": f"the benchmark process died {self.why()}"}
        return outcomes

    def close(self) -> None:
        if self.proc.poll() is None and not self.proc.stdin.closed:
            self.send([])
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            _stop(self.proc)
        self._log.close()


def _drain(stream, lines: list[str], attached: threading.Event) -> None:
    for line in stream:
        lines.append(line)
        if "Sampling process" in line:
            attached.set()


def _record(worker: _Worker, cases: list[Case], *, pyspy: str, seconds: float, rate: int,
            raw: Path) -> tuple[dict[tuple[str, int], dict], _Recording, str | None]:
    """Attach py-spy to the waiting worker, give it `cases`, record until it exits.

    Returns the worker's outcomes, the recording, and why nothing could be recorded (or None).
    """
    raw.unlink(missing_ok=True)
    recording = _Recording([pyspy, "record", "--pid", str(worker.proc.pid), "--native", "--rate", str(rate),
                            "--format", "raw", "--output", str(raw)])
    spy = subprocess.Popen(recording.command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           errors="replace")
    try:
        attached = threading.Event()
        reader = threading.Thread(target=_drain, args=(spy.stdout, recording.output, attached), daemon=True)
        reader.start()
        deadline = time.monotonic() + ATTACH_TIMEOUT
        while not attached.wait(0.05) and spy.poll() is None and time.monotonic() < deadline:
            pass
        if not attached.is_set():
            _stop(spy)
            reader.join(timeout=10)
            recording.returncode = spy.returncode
            return {}, recording, recording.failure()
        worker.send(cases)
        try:
            worker.proc.wait(timeout=len(cases) * (seconds + CASE_TIMEOUT))
        except subprocess.TimeoutExpired:
            _stop(worker.proc)
        # py-spy stops by itself once the process is gone (reaped above); else SIGINT, its Ctrl-C,
        # makes it write what it has
        try:
            spy.wait(timeout=ATTACH_TIMEOUT)
        except subprocess.TimeoutExpired:
            _stop(spy, signal.SIGINT)
        reader.join(timeout=10)
    finally:
        _stop(spy, signal.SIGINT)
    recording.returncode = spy.returncode
    wrote = any("Wrote raw flamegraph data" in line for line in recording.output)
    # Known py-spy issue (py-spy#759): "No child process (os error 10)", exit 1, after the file was
    # written. Whatever the exit status, a file py-spy said it wrote, and that parses whole, is good.
    if raw.exists() and (spy.returncode == 0 or wrote):
        try:
            recording.stacks = parse_collapsed(raw.read_text(encoding="utf-8", errors="replace"), "py-spy output")
        except ValueError:
            recording.stacks = None
    return worker.outcomes(), recording, None


def _save(out: Path, commit: commits.Commit, case: Case, stacks: dict[str, int], result: dict,
          recording: _Recording, rate: int, python: Path, pyspy_version: str) -> int:
    """Write the case's .collapsed, .svg and, last (it marks the profile whole), .json."""
    p = location(out, commit.sha, case.benchmark, case.index)
    samples = sum(stacks.values())
    atomic_write_text(p.collapsed, "".join(f"{s} {n}\n" for s, n in sorted(stacks.items())))
    atomic_write_text(p.svg, render_svg(
        stacks, title=case.title,
        subtitle=f"{commit.short} {commit.subject[:60]} · {samples} samples at {rate} Hz in {result['seconds']:.1f} s"
                 " · py-spy --native"))
    total, errors = recording.counts()
    meta = {
        "commit": commit.sha, "subject": commit.subject, "benchmark": case.benchmark, "index": case.index,
        "params": case.params, "title": case.title, "duration": result["seconds"], "samples": samples,
        "rate": rate, "native": True, "py_spy_command": recording.command, "py_spy_version": pyspy_version,
        "py_spy_samples_in_recording": total, "py_spy_errors_in_recording": errors,
        "runs_per_batch": result["number"], "batches": result["batches"], "python": str(python),
        "recorded_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "how": "one py-spy recording of a process that ran its commit's cases in turn; these are the stacks "
               f"inside this case's loop frame, from it ({MARKER_NAME}) down",
    }
    atomic_write_text(p.meta, json.dumps(meta, indent=1) + "\n")
    return samples


def _keep(out: Path, commit: commits.Commit, case: Case, result: dict, recording: _Recording, rate: int,
          python: Path, pyspy_version: str, report: CommitProfiles) -> str | None:
    """Store one case's profile from the worker's result and the recording; or say why there is none."""
    if result.get("skipped"):
        report.skipped += 1
        return None
    if "error" in result:
        return f"the benchmark failed: {result['error']}"
    if recording.stacks is None:
        return recording.failure()
    stacks = case_stacks(recording.stacks, result["marker"])
    if not stacks:
        return f"py-spy took no sample inside the benchmark ({last_line(''.join(recording.output))})"
    samples = _save(out, commit, case, stacks, result, recording, rate, python, pyspy_version)
    report.recorded += 1
    print(f"   {case.title}: {samples} samples", flush=True)
    return None


def _pyspy_version(pyspy: str) -> str:
    proc = subprocess.run([pyspy, "--version"], capture_output=True, text=True)
    return proc.stdout.strip() or "unknown"


def profile_cases(python: Path, suite: Path, env: dict[str, str], commit: commits.Commit, out: Path, *,
                  pyspy: str, patterns: list[str] = (), only: Callable[[Case], bool] | None = None,
                  seconds: float = DEFAULT_SECONDS, rate: int = DEFAULT_RATE, rerun: bool = False,
                  report: CommitProfiles | None = None) -> CommitProfiles:
    """Record the selected cases (select_cases(listing, patterns), then `only`) of `commit`, importable by
    `python` with `env`, into OUT/profiles; the cases already there are skipped unless `rerun`."""
    report = report or CommitProfiles(commit)
    start = time.monotonic()
    todo: list[Case] | None = None  # unknown until the first process has listed the suite

    def fail(case: Case | None, why: str) -> None:
        message = f"{commit.short} {case.title if case else f'({commit.subject[:40]})'}: {why}"
        report.failures.append(message)
        print(f"torchbench profile: {message}", file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="torchbench-profile-") as tmp:
        while todo is None or todo:
            worker = _Worker(python, suite, env, seconds, Path(tmp))
            try:
                listing = worker.wait_ready(READY_TIMEOUT)
                if listing is None:
                    why = f"the benchmark process did not start {worker.why()}"
                    for case in todo or [None]:
                        fail(case, why)
                    break
                if todo is None:
                    cases = [c for c in select_cases(listing, list(patterns)) if only is None or only(c)]
                    if not cases:
                        wanted = " or ".join(patterns) if patterns else f"TimerSuite cases labelled {OVERHEAD_LABEL}"
                        fail(None, f"no benchmark in {suite} matches {wanted}")
                        break
                    todo = [c for c in cases
                            if rerun or not location(out, commit.sha, c.benchmark, c.index).meta.exists()]
                    report.existing += len(cases) - len(todo)
                    print(f"== {commit.short} ({commit.subject[:50]}): {len(cases)} case(s)"
                          + (f", {len(cases) - len(todo)} already recorded" if len(todo) < len(cases) else "")
                          + (f"; {seconds:g} s each at {rate} Hz" if todo else ""), flush=True)
                    if not todo:
                        break
                    version = _pyspy_version(pyspy)
                outcomes, recording, failure = _record(worker, todo, pyspy=pyspy, seconds=seconds, rate=rate,
                                                       raw=Path(tmp) / "profile.collapsed")
            finally:
                worker.close()
            reached = [c for c in todo if c.key in outcomes]
            if failure or not reached:
                for case in todo:
                    fail(case, failure or f"the benchmark process ended before this case {worker.why()}")
                break
            for case in reached:
                why = _keep(out, commit, case, outcomes[case.key], recording, rate, python, version, report)
                if why:
                    fail(case, why)
            todo = [c for c in todo if c.key not in outcomes]  # a process died: the rest in a new one
    report.seconds += time.monotonic() - start
    return report


# -- the command ---------------------------------------------------------------------------------

def _profile_commit(ws: Workspace, python: Path, commit: commits.Commit, pyspy: str,
                    options: ProfileOptions) -> CommitProfiles:
    """Build (or reuse) the commit's installation and record its cases; a failure here is the commit's own."""
    report = CommitProfiles(commit)
    start = time.monotonic()
    install, why = ws.install(commit, python)
    if why:
        report.failures.append(f"{commit.short} does not build: {why}")
        print(f"torchbench profile: {report.failures[-1]}", file=sys.stderr, flush=True)
    else:
        profile_cases(python, ws.bench_dir, install_env(install), commit, ws.out,
                      pyspy=pyspy, patterns=list(options.patterns), seconds=options.seconds, rate=options.rate,
                      rerun=options.rerun, report=report)
    report.seconds = time.monotonic() - start
    return report


@dataclass
class Profiled:
    """What `profile_history` did: one report per commit reached, and notes (an interruption)."""

    selected: list[commits.Commit]
    reports: list[CommitProfiles] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.notes and not any(r.failures for r in self.reports) and len(self.reports) == len(self.selected)


def profile_history(folders: Folders, selection: commits.Selection = commits.Selection(),
                    options: ProfileOptions = ProfileOptions()) -> Profiled:
    """Flame graphs of the selected cases at each selected commit, into OUT/profiles."""
    pyspy = tools.find("py-spy")
    if pyspy is None:
        raise UserError(NO_PYSPY)
    selected = commits.select(folders.repo, selection)
    ws = open_workspace(out=folders.out, env_dir=folders.env_dir, repo_path=folders.repo_path, repo=folders.repo,
                        project_sha=selected[-1].sha, benchmarks=options.benchmarks, fds=folders.fds,
                        user=folders.config)
    print(f"== profiling {folders.repo_path}: {len(selected)} commit(s), {selected[0].short}..{selected[-1].short}; "
          f"suites in {ws.bench_dir}; output in {folders.out / 'profiles'}", flush=True)
    done = Profiled(selected)
    try:
        python = ws.pythons()[0]
        for commit in selected:
            done.reports.append(_profile_commit(ws, python, commit, pyspy, options))
    except KeyboardInterrupt:
        done.notes.append("interrupted: the profiles written so far are kept; run again to go on")
    return done


def render_report(done: Profiled, out: Path) -> str:
    lines = ["", f"== profiles in {out / 'profiles'}",
             f"  {'commit':8}  {'recorded':>8}  {'existing':>8}  {'skipped':>7}  {'failed':>6}  {'seconds':>7}"]
    for r in done.reports:
        lines.append(f"  {r.commit.short:8}  {r.recorded:8}  {r.existing:8}  {r.skipped:7}  {len(r.failures):6}  "
                     f"{r.seconds:7.1f}  {r.commit.subject[:40]}")
    failures = [f for r in done.reports for f in r.failures]
    if failures or done.notes:
        lines.append("problems:" if failures else "notes:")
        lines += [f"  - {f}" for f in failures + done.notes]
    return "\n".join(lines)
