"""`torchbench run` end to end: real git repositories, real asv environments, real processes.

One environment folder is shared by every run here (--env-dir): it is built
once (torch from the pinned CPU wheel), and each run installs its own
project's build backend into it (hatchling for the example, flit_core for
the throwaway library).
"""

import http.server
import json
import math
import os
import shutil
import signal
import site
import subprocess
import sys
import threading
import time
from functools import partial
from pathlib import Path

import git
import pytest

from torchbench.asv_bridge import results

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]

PYPROJECT_FLIT = """\
[build-system]
requires = ["flit_core>=3.4,<4"]
build-backend = "flit_core.buildapi"

[project]
name = "flitlib"
version = "0.1"
description = "a throwaway library built with flit"
dependencies = ["torch"]
"""
FAST = "def work(n):\n    return sum(range(n))\n"
SLOW = "def work(n):\n    return sum(sum(range(n)) for _ in range(4))\n"
ROUNDS = 3  # the flit history's processes per benchmark and commit (run --rounds)
SUITE = '''\
import ctypes
import os
import time

import flitlib
from torchbench_core.asv_suite import TimerSpec, TimerSuite


class Work(TimerSuite):
    timers = [TimerSpec("flitlib.work(200)", globals={"flitlib": flitlib}, label="flitlib", sub_label="work(200)",
                        description="sum of a range")]
    min_run_time = 0.1


class Plain:
    """A plain asv time_ method (no torchbench_core): `torchbench run` counts its instructions per commit."""

    params = [200]
    param_names = ["n"]

    def setup(self, n):
        self.n = n

    def time_work(self, n):
        flitlib.work(self.n)


class Timed:
    """A track_ method that times a torch.utils.benchmark Timer and returns its median, as torch libraries'
    suites write them: `torchbench run` counts its statement per commit, in place."""

    def setup(self):
        self.n = 200

    def track_work(self):
        from torch.utils.benchmark import Timer

        timer = Timer("flitlib.work(n)", globals={"flitlib": flitlib, "n": self.n})
        return timer.blocked_autorange(min_run_time=0.05).median * 1e6

    track_work.unit = "us"


def track_process():
    """The process that measured it, in asv's sample form (asv pools the samples of a benchmark's rounds)."""
    return {"samples": [float(os.getpid())], "number": 1}


def track_raises():
    raise RuntimeError("this benchmark always fails")


def track_segfaults():
    ctypes.string_at(0)


def track_hangs():
    time.sleep(600)


track_hangs.timeout = 3
'''


def _subject(args) -> list[str]:
    """From inside this checkout (a git repository, hence the project), the example is asked for by name."""
    return [] if "--repo" in args or "--existing" in args else ["--example"]


def torchbench(*args, timeout=1800):
    return subprocess.run([sys.executable, "-m", "torchbench", "run", *_subject(args), *map(str, args)],
                          capture_output=True, text=True, cwd=ROOT, timeout=timeout)


def explain(proc):
    return f"exit {proc.returncode}\n--- stdout\n{proc.stdout[-6000:]}\n--- stderr\n{proc.stderr[-3000:]}"


@pytest.fixture(scope="session")
def flitlib(tmp_path_factory):
    """fast -> 4x slower -> does not build (module missing) -> builds again."""
    path = tmp_path_factory.mktemp("repos") / "flitlib"
    (path / "flitlib").mkdir(parents=True)
    (path / "benchmarks").mkdir()
    repo = git.Repo.init(path, initial_branch="main")
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "t").set_value("user", "email", "t@example.com")
    (path / "pyproject.toml").write_text(PYPROJECT_FLIT)
    (path / "benchmarks" / "__init__.py").write_text("")
    (path / "benchmarks" / "bench_work.py").write_text(SUITE)
    shas = []
    for body, message in ((FAST, "fast"), (SLOW, "four times the work"), (None, "lose the module"),
                          (SLOW, "module back")):
        module = path / "flitlib" / "__init__.py"
        if body is None:
            repo.index.remove([str(module)], working_tree=True)
        else:
            module.parent.mkdir(exist_ok=True)
            module.write_text(body)
            repo.index.add(["pyproject.toml", "flitlib/__init__.py", "benchmarks/__init__.py",
                            "benchmarks/bench_work.py"])
        shas.append(repo.index.commit(message).hexsha)
    return path, shas


def value(found, commit, benchmark, **params):
    (row,) = [r for r in found.rows if r.commit == commit and r.benchmark == benchmark
              and all(dict(r.params).get(k) == v for k, v in params.items())]
    return row.value


# -- a library that is not built with setuptools ---------------------------------------------------------

@pytest.fixture(scope="session")
def flit_history(flitlib, env_dir, tmp_path_factory):
    path, shas = flitlib
    out = tmp_path_factory.mktemp("flit-out")
    return (torchbench("--repo", path, "--last", 4, "--out", out, "--env-dir", env_dir, "--rounds", ROUNDS), out,
            shas)


def test_a_flit_library_is_built_per_commit_and_its_slowdown_recorded(flit_history):
    proc, out, shas = flit_history
    found = results.load(out / "results")
    assert not found.warnings
    fast, slow = (value(found, c, "bench_work.Work.track_time") for c in (shas[0], shas[1]))
    assert slow > 1.5 * fast, explain(proc)  # four times the work
    assert value(found, shas[3], "bench_work.Work.track_time") > 0
    assert "flit_core" in proc.stdout  # the backend came from the project's [build-system]


def test_a_commit_that_does_not_build_is_reported_and_the_history_goes_on(flit_history):
    proc, out, shas = flit_history
    lines = proc.stdout.splitlines()
    (broken,) = [line for line in lines if line.strip().startswith(shas[2][:8])]
    assert "NOT BUILT" in broken, explain(proc)
    (after,) = [line for line in lines if line.strip().startswith(shas[3][:8])]
    assert "4 measured, 2 with instruction counts, 3 FAILED" in after


def test_rounds_measure_each_benchmark_in_that_many_fresh_processes_and_pool_their_samples(flit_history):
    proc, out, shas = flit_history
    found = results.load(out / "results")
    for sha in (shas[0], shas[1], shas[3]):
        (row,) = [r for r in found.rows if r.commit == sha and r.benchmark == "bench_work.track_process"]
        pids = row.samples
        assert len(pids) == len(set(pids)) == ROUNDS, explain(proc)
        # the plugin keeps each process's level apart (here its one sample: its pid), for the pages' evidence
        assert sorted(row.levels) == sorted(pids) and row.processes == ROUNDS


def test_benchmarks_that_raise_crash_or_hang_fail_alone_named_and_exit_2(flit_history):
    proc, out, shas = flit_history
    assert proc.returncode == 2, explain(proc)
    for sha in (shas[0], shas[1], shas[3]):
        assert (f"FAILED {sha[:8]} bench_work.track_raises: exit status 1: "
                f"RuntimeError: this benchmark always fails") in proc.stdout
        assert f"FAILED {sha[:8]} bench_work.track_segfaults: exit status" in proc.stdout
        assert f"FAILED {sha[:8]} bench_work.track_hangs: exit status" in proc.stdout
    assert "NOT everything was measured (exit status 2)" in proc.stdout
    assert "== where the time went" in proc.stdout and "build+install, per commit" in proc.stdout


def test_a_plain_time_method_is_counted_per_commit_and_its_counts_shown_beside_its_times(flit_history):
    proc, out, shas = flit_history
    found = results.load(out / "results")
    counted = {r.commit: r for r in found.rows if r.benchmark == "bench_work.Plain.time_work:instructions"}
    timed = {r.commit: r for r in found.rows if r.benchmark == "bench_work.Plain.time_work" and r.status == "ok"}
    assert set(counted) == set(timed) == {shas[0], shas[1], shas[3]}, explain(proc)  # shas[2] does not build
    for sha, row in counted.items():  # one valgrind process: two repeats that agree, or three, per call
        assert row.unit == "instructions" and row.processes == 1 and len(row.samples) in (2, 3)
        assert row.placement() == timed[sha].placement() and row.params == timed[sha].params
    assert 3 < counted[shas[1]].value / counted[shas[0]].value < 6  # four times the work (and a generator)
    assert counted[shas[3]].value == pytest.approx(counted[shas[1]].value, rel=0.03)  # the same code
    # the Timer-in-track_ row's statement too; a track_ row that times no Timer says so
    statement = {r.commit: r for r in found.rows if r.benchmark == "bench_work.Timed.track_work:instructions"}
    assert set(statement) == set(counted), explain(proc)
    assert 3 < statement[shas[1]].value / statement[shas[0]].value < 6
    assert statement[shas[3]].value == pytest.approx(statement[shas[1]].value, rel=0.03)
    assert ("instruction counts of time_ and track_ rows: 6 counted, 0 from the cache, 3 not countable, 0 failed"
            in proc.stdout), explain(proc)
    # kept under the plans and counts that `alert` and `find` in this output folder read too: the track_ row's
    # plan, made by its first count, is kept as a statement's, and each commit's counts are cached under it, so
    # that an alert whose base is one of these commits plans the row alike and reads the base from the cache
    (plans_file,) = (out / "counts" / "plans").glob("*.json")
    kept = json.loads(plans_file.read_text())
    (case,) = [c for c in kept["statements"] if c.startswith("bench_work.Timed.track_work|0|")]
    planned = f"{case}|plan {kept['plans'][case][0]}x{kept['plans'][case][1]}"
    for sha in counted:
        cases = {key for f in (out / "counts" / sha).rglob("*.json") for key in json.loads(f.read_text())["cases"]}
        assert planned in cases, (sha, sorted(cases))
    # the site: the benchmark's Compare page has the counts beside its times, in every commit that has them
    from torchbench.publish.pages import slug
    page = (out / "html" / "torchbench" / "compare" / f"{slug('bench_work.Plain.time_work')}.html").read_text()
    data = json.loads(page.split('<script id="compare-data" type="application/json">')[1].split("</script>")[0])
    shown = {env.rsplit(".", 1)[1]: list(cells.values()) for env, cells in data["instructions"].items()}
    assert sorted(shown) == sorted(sha[:12] for sha in (shas[0], shas[1], shas[3])), data["instructions"]
    assert shown[shas[1][:12]] == [pytest.approx(counted[shas[1]].value)]
    from torchbench.publish.pages import COUNTS_TITLE  # the cells' tooltip, the same text the script gives
    assert f'<span class="counts" title="{COUNTS_TITLE}">' in page and data["counts_title"] == COUNTS_TITLE
    # find sees a step in the counts as in the times, and re-measures the timed benchmark for it
    from torchbench.history import changepoints
    series = {h.benchmark for h in changepoints.histories(found.rows, {s: i for i, s in enumerate(shas)})}
    assert {"bench_work.Plain.time_work", "bench_work.Plain.time_work:instructions"} <= series


# -- the example history ---------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def example_history(env_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("example-out")
    # one process a commit: the example's steps are 3x, and the suite's time matters (CI keeps under 30 min);
    # --rounds itself is tested on the flit history, and the main job measures the example at its default
    return torchbench("--out", out, "--env-dir", env_dir, "--rounds", 1), out


def test_the_example_history_is_measured_whole(example_history):
    proc, out = example_history
    assert proc.returncode == 0, explain(proc)
    assert "everything was measured (exit status 0)" in proc.stdout
    found = results.load(out / "results")
    assert not found.warnings and len({r.commit for r in found.rows}) == 6
    assert all(r.status == "ok" for r in found.rows)


def test_the_example_history_has_the_step_up_and_the_step_down(example_history):
    """TensorLike's dispatch slows ~3x at the third commit and recovers at the fifth.

    One process per case and commit, on a machine that moves whole processes
    by up to 2x: each commit's figure is the geometric mean of its add and mul
    cases, and the step must stand out from every unchanged commit."""
    _, out = example_history
    found = results.load(out / "results")
    order = [c.hexsha for c in reversed(list(git.Repo(out / "example" / "tensorlib").iter_commits("HEAD")))]

    def series(sub_label):
        return [math.sqrt(value(found, c, "bench_dispatch.Dispatch.track_time", sub_label=sub_label,
                                description="torch.add(a, b)")
                          * value(found, c, "bench_dispatch.Dispatch.track_time", sub_label=sub_label,
                                  description="torch.mul(a, b)")) for c in order]

    tensor_like = series("TensorLike")
    regressed, unchanged = tensor_like[2:4], tensor_like[:2] + tensor_like[4:]
    assert min(regressed) > 1.3 * max(unchanged), tensor_like  # up at commit 3, down at commit 5
    # plain Tensor has no step: not the TensorLike's 3x. One process a commit can be up to 2x off here (more
    # with a second test worker beside it), so a tighter bound than 3x tests the machine, not the history.
    tensor = series("Tensor")
    assert max(tensor) < 3 * min(tensor), tensor


def test_the_example_site_is_published_and_needs_no_internet(example_history):
    _, out = example_history
    index = (out / "html" / "index.html").read_text()
    assert "code.jquery.com" not in index and "cdnjs.cloudflare.com" not in index
    assert (out / "html" / "vendor" / "jquery.min.js").exists()
    graphs = list((out / "html" / "graphs").rglob("*.json"))
    assert any("bench_dispatch.Dispatch.track_time" in str(p) for p in graphs)


def test_the_example_site_renders_in_a_real_browser(example_history):
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("chromium is not installed (scripts/test.sh installs the Debian package)")
    _, out = example_history
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(out / "html"))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        proc = subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={out / 'chrome-profile'}", "--virtual-time-budget=10000", "--dump-dom",
             f"http://127.0.0.1:{server.server_address[1]}/index.html"],
            capture_output=True, text=True, timeout=180)
    finally:
        server.shutdown()
    assert "continental origin of swallow" not in proc.stdout
    assert "Dispatch.track_time" in proc.stdout and "bench_dispatch" in proc.stdout


# -- a torch developer's own build ----------------------------------------------------------------------

def venv_over_a_bare_interpreter(path: Path) -> Path:
    """PATH/venv/bin/python: a venv whose python is a symlink to an interpreter that, run by itself, cannot
    import torch, numpy or asv_runner; only the venv can.

    That is a developer's venv over a bare system python. This machine's python has everything installed,
    so a venv made from it would not tell the venv's python from the interpreter it links to; the bare
    interpreter is therefore a copy of it in a venv of its own without site packages (PATH/base), and the
    venv links to it. The venv sees what this test's interpreter sees (its site folders, .pth files
    included, so this holds when the tests themselves run in a venv)."""
    base, venv = path / "base", path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--copies", str(base)], check=True)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for name in ("python", "python3", version):
        (venv / "bin" / name).unlink(missing_ok=True)
    (venv / "bin" / version).symlink_to(base / "bin" / version)
    (venv / "bin" / "python").symlink_to(version)
    (venv / "bin" / "python3").symlink_to(version)
    (site_packages,) = (venv / "lib").glob("python3.*/site-packages")
    outer = [p for p in [*site.getsitepackages(), site.getusersitepackages()] if Path(p).is_dir()]
    (site_packages / "outer.pth").write_text("".join(f"import site; site.addsitedir({p!r})\n" for p in outer))

    python = venv / "bin" / "python"
    assert python.is_symlink() and python.resolve() == (base / "bin" / version).resolve()

    def imports(py):
        return subprocess.run([str(py), "-c", "import torch, numpy, asv_runner"], check=False,
                              capture_output=True, env=dict(os.environ, PYTHONPATH="")).returncode == 0

    assert imports(python) and not imports(python.resolve())
    return python


def test_an_existing_torch_build_is_measured_and_filed_under_its_commit(tmp_path, env_dir):
    """This machine's torch, seen through a venv, stands in for a local source build; a throwaway repository
    for its checkout. The venv's python is given as is: its link target lacks the venv's packages."""
    python = venv_over_a_bare_interpreter(tmp_path / "envs")
    checkout = tmp_path / "pytorch"
    checkout.mkdir()
    repo = git.Repo.init(checkout, initial_branch="main")
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "t").set_value("user", "email", "t@example.com")
    (checkout / "README").write_text("a torch checkout")
    repo.index.add(["README"])
    sha = repo.index.commit("the commit the build came from").hexsha
    out = tmp_path / "out"
    proc = torchbench("--existing", python, "--repo", checkout, "--commit", sha[:10], "-b",
                      "TorchFunctionOverhead", "--out", out)
    assert proc.returncode == 0, explain(proc)
    found = results.load(out / "results")
    assert {r.commit for r in found.rows} == {sha}
    # the environment is named after the venv's python, not the interpreter it links to
    assert all(r.env_name.startswith("existing-") and "venv_bin_python" in r.env_name for r in found.rows)
    rows = {dict(r.params)["sub_label"]: r for r in found.rows}
    assert set(rows) == {"Tensor", "SubTensor", "WithTorchFunction", "SubWithTorchFunction"}
    assert all(r.status == "ok" and len(r.samples) >= 5 for r in rows.values())
    # filed under the commit: a second build of the same commit goes on from the saved results
    again = torchbench("--existing", python, "--repo", checkout, "--commit", sha, "-b",
                       "TorchFunctionOverhead", "--out", out, "--no-publish")
    assert again.returncode == 0 and "4 measured" in again.stdout, explain(again)


# -- nothing is lost ---------------------------------------------------------------------------------------

def _default_sigint():
    # A shell runs background jobs with SIGINT ignored, and children inherit that: Python then never
    # raises KeyboardInterrupt. A user's Ctrl-C reaches a run started from a terminal, so restore it.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(args, out, env_dir):
    return subprocess.Popen([sys.executable, "-m", "torchbench", "run", *_subject(args), *map(str, args),
                             "--out", str(out), "--env-dir", str(env_dir), "--no-publish"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            preexec_fn=_default_sigint)


def wait_for_results(out, count, proc, timeout=600):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        files = [p for p in (out / "results").glob("*/*.json") if p.name != "machine.json"]
        if len(files) >= count:
            return
        if proc.poll() is not None:
            pytest.fail(f"the run ended before {count} result file(s) appeared:\n{proc.stdout.read()[-4000:]}")
        time.sleep(0.05)
    pytest.fail("no results in time")


def all_readable(out, temporaries_allowed=False):
    found = results.load(out / "results")
    assert not found.warnings, found.warnings
    # a SIGKILL between an atomic write and its rename leaves the hidden temporary (never a half file in
    # its place); the next run clears it
    left = list(out.rglob("*.tmp"))
    if temporaries_allowed:
        assert all(p.name.startswith(".") for p in left), left
    else:
        assert not left, "half-written files left behind"
    return found


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_a_killed_run_loses_nothing_and_the_next_run_goes_on(flitlib, env_dir, tmp_path, sig):
    path, shas = flitlib
    hashfile = tmp_path / "hashes"
    hashfile.write_text(f"{shas[0]}\n{shas[1]}\n{shas[3]}\n")
    out = tmp_path / "out"
    args = ["--repo", path, "--hashfile", hashfile, "-b", "Work"]
    first = start(args, out, env_dir)
    try:
        # a second run on the same folders meanwhile is refused, at once (the config is derived under the
        # lock, so once it exists the lock is held); checked before the first result, so that the kill
        # below follows that result at once and cannot come after the whole run has finished
        deadline = time.monotonic() + 120
        while not (out / "asv.conf.json").exists() and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.05)
        refused = torchbench(*args, "--out", out, "--env-dir", env_dir, timeout=120)
        assert refused.returncode == 2 and "in use by another torchbench run" in refused.stderr, explain(refused)
        wait_for_results(out, 1, first)
        os.killpg(first.pid, sig)
        output, _ = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
    if sig == signal.SIGINT:  # our report still comes, and says the run was cut short
        assert first.returncode == 2 and "interrupted" in output and "== report" in output, output[-4000:]
    saved = {r.commit for r in all_readable(out, temporaries_allowed=sig == signal.SIGKILL).rows}
    assert shas[0] in saved and len(saved) < 3, saved
    first_file = next((out / "results").glob(f"*/{shas[0][:8]}-*.json"))
    first_written = first_file.stat().st_mtime_ns

    rest = torchbench(*args, "--out", out, "--env-dir", env_dir, "--no-publish")
    assert rest.returncode == 0, explain(rest)
    found = all_readable(out)
    assert {r.commit for r in found.rows} == {shas[0], shas[1], shas[3]}
    assert all(r.status == "ok" for r in found.rows)
    assert first_file.stat().st_mtime_ns == first_written  # what was saved before the kill is not redone


def test_an_outcome_record_survives_in_json(flit_history):
    _, out, shas = flit_history
    records = list((out / "outcomes").rglob("*.json"))
    assert len(records) == 4
    broken = next(json.loads(p.read_text()) for p in records if p.name.startswith(shas[2][:8]))
    assert broken["build"]["built"] is False and "flitlib" in broken["build"]["log"]
