"""The tracker's parts without running asv: results reader (on real result files),
exit-status policy, commit selection, project description, locks, atomic writes,
the example's patch series and the command line's errors."""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import git
import pytest

from torchbench.asv_bridge import plugin as asv_plugin, results
from torchbench.history import report
from torchbench.project import commits, config, example, lock
from torchbench.asv_bridge.driver import Timings
from torchbench import resources
from torchbench.errors import EXIT_FAILURE, EXIT_OK, UserError

ROOT = Path(__file__).resolve().parents[1]
REAL_RUN = ROOT / "tests" / "data" / "flitlib_run"  # `torchbench run` of a 2-commit flit_core library
FAST, SLOW = "d20170e2b2a240f385933841a2d25c6503a9d890", "8aba9dc52b70f25f5826cea43ce4b83e9d2aa571"
WORK = "bench_work.Work.track_time"


def make_repo(path: Path, files_per_commit: list[dict[str, str]]) -> tuple[git.Repo, list[str]]:
    repo = git.Repo.init(path, initial_branch="main")
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "t").set_value("user", "email", "t@example.com")
    shas = []
    for i, files in enumerate(files_per_commit):
        for name, text in files.items():
            (path / name).parent.mkdir(parents=True, exist_ok=True)
            (path / name).write_text(text)
        repo.index.add(list(files))
        shas.append(repo.index.commit(f"commit {i}").hexsha)
    return repo, shas


@pytest.fixture
def real_run(tmp_path):
    out = tmp_path / "out"
    shutil.copytree(REAL_RUN, out)
    return out


# -- results reader, on real asv result files ---------------------------------------------------------

def test_reader_turns_real_results_into_measurements_with_task_specs(real_run):
    found = results.load(real_run / "results")
    assert not found.warnings
    work = {r.commit: r for r in found.rows if r.benchmark == WORK}
    assert set(work) == {FAST, SLOW}
    row = work[SLOW]
    assert row.status == "ok" and row.unit == "seconds" and row.machine == "vm"
    assert dict(row.params) == {"label": "flitlib", "sub_label": "work(200)", "description": "sum of a range",
                                "num_threads": 1}
    m = row.measurement()
    spec = m.task_spec
    assert (spec.label, spec.sub_label, spec.description, spec.num_threads) == (
        "flitlib", "work(200)", "sum of a range", 1)
    assert spec.env == f"{row.env_name}@{SLOW[:8]}"
    # raw samples are kept: per-call times, as asv recorded them
    assert len(m.times) == len(row.samples) >= 5 and m.times == pytest.approx(row.samples)
    assert m.number_per_run == row.number > 1
    assert m.median == pytest.approx(row.value, rel=1e-3)  # asv rounds its stats to 5 digits
    assert work[SLOW].value > 2 * work[FAST].value  # the commit did four times the work


def test_reader_reports_failures_with_their_recorded_reason(real_run):
    found = results.load(real_run / "results")
    failed = [r for r in found.rows if r.status == "failed"]
    assert {r.benchmark for r in failed} == {"bench_work.track_crashes"} and len(failed) == 2
    assert failed[0].measurement() is None
    outcome = found.outcomes[("vm", FAST, failed[0].env_name)]
    assert outcome.built is True
    assert "this benchmark always fails" in outcome.failures["bench_work.track_crashes"]["stderr"]


def test_a_malformed_results_file_is_named_and_the_others_still_used(real_run):
    bad = real_run / "results" / "vm" / "0123abcd-virtualenv-py3.11.json"
    bad.write_text('{"results": {"x": [1, 2')
    foreign = real_run / "results" / "vm" / "4567abcd-virtualenv-py3.11.json"
    foreign.write_text(json.dumps({"version": 2, "something": "else"}))
    found = results.load(real_run / "results")
    assert len(found.warnings) == 2
    assert any(str(bad) in w for w in found.warnings) and any(str(foreign) in w for w in found.warnings)
    assert {r.commit for r in found.rows} == {FAST, SLOW}


def test_the_reader_can_keep_only_some_commits(real_run):
    found = results.load(real_run / "results", commits={SLOW})
    assert {r.commit for r in found.rows} == {SLOW} and len(found.files) == 1


def test_counts_recorded_in_an_outcome_record_are_rows_beside_their_times_and_an_asv_save_keeps_them(real_run):
    results_dir = real_run / "results"
    (file,) = [p for p in (results_dir / "vm").glob(f"{FAST[:8]}-*.json")]
    filename, env_name = f"vm/{file.name}", file.stem[9:]
    asv_plugin.record_counts(results_dir, filename, FAST, env_name, {WORK: {0: [100.0, 103.0, 101.0]}}, {})
    found = results.load(results_dir)
    (timed,) = [r for r in found.rows if r.benchmark == WORK and r.commit == FAST]
    (counted,) = [r for r in found.rows if r.benchmark == results.counts_row_name(WORK)]
    assert (counted.commit, counted.value, counted.samples, counted.unit) == (FAST, 101.0, (100.0, 103.0, 101.0),
                                                                             "instructions")
    assert counted.placement() == timed.placement() and counted.params == timed.params  # the pages pair them
    assert results.timed_benchmark(counted.benchmark) == WORK
    # asv saving the file again (a later round, a --rerun) keeps the counts: the same code counts the same
    from asv.results import Results
    asv_plugin._recording_save(lambda self, result_dir: None, Results.load(str(file)), str(results_dir))
    assert results.load(results_dir).outcomes[("vm", FAST, env_name)].counts == {WORK: {0: [100.0, 103.0, 101.0]}}
    # a reason recorded later replaces the counts of that combination, and the other way round
    asv_plugin.record_counts(results_dir, filename, FAST, env_name, {}, {WORK: {0: "counting failed: boom"}})
    outcome = results.load(results_dir).outcomes[("vm", FAST, env_name)]
    assert (outcome.counts, outcome.uncounted) == ({}, {WORK: {0: "counting failed: boom"}})
    assert not [r for r in results.load(results_dir).rows if r.benchmark.endswith(results.COUNTS_OF)]


def test_a_malformed_count_in_an_outcome_record_is_named_and_the_times_kept(real_run):
    (record,) = (real_run / "outcomes" / "vm").glob(f"{FAST[:8]}-*.json")
    doc = json.loads(record.read_text())
    record.write_text(json.dumps({**doc, "counts": {WORK: [1.0, 2.0]}}))
    found = results.load(real_run / "results")
    assert any(str(record) in w and "not a readable outcome record" in w for w in found.warnings)
    assert any(r.benchmark == WORK and r.commit == FAST and r.status == "ok" for r in found.rows)


# -- exit-status policy ---------------------------------------------------------------------------------

def test_a_failed_benchmark_makes_the_run_exit_2_and_is_named(real_run):
    found = results.load(real_run / "results")
    run = report.summarize([commits.Commit(FAST, "fast"), commits.Commit(SLOW, "slow")], found, Timings())
    assert run.exit_status() == EXIT_FAILURE
    text = run.render()
    assert "FAILED d20170e2 bench_work.track_crashes: exit status 1: RuntimeError: this benchmark always fails" in text
    assert "1 measured, 1 FAILED" in text and "exit status 2" in text


def test_everything_measured_exits_0_and_skipped_combinations_are_not_failures(real_run):
    found = results.load(real_run / "results")
    found.rows = [r for r in found.rows if r.benchmark == WORK]
    nan_row = found.rows[0].__class__(**{**found.rows[0].__dict__, "value": float("nan"), "benchmark": "b.x"})
    found.rows.append(nan_row)
    run = report.summarize([commits.Commit(FAST, "fast"), commits.Commit(SLOW, "slow")], found, Timings())
    assert run.exit_status() == EXIT_OK, run.render()
    assert "1 skipped" in run.render()


def test_a_commit_without_results_or_a_build_failure_exits_2(real_run):
    found = results.load(real_run / "results")
    missing = commits.Commit("f" * 40, "never measured")
    run = report.summarize([commits.Commit(FAST, "fast"), missing], found, Timings())
    assert run.exit_status() == EXIT_FAILURE and "ffffffff never measured: no results" in run.render()
    env = found.rows[0].env_name
    found.outcomes[("vm", SLOW, env)] = results.Outcome({"built": False, "log": "x\nerror: no module named y"}, {})
    run = report.summarize([commits.Commit(SLOW, "slow")], found, Timings())
    assert "NOT BUILT" in run.render() and "error: no module named y" in run.render()
    assert run.exit_status() == EXIT_FAILURE


def test_tool_problems_and_unreadable_files_exit_2(real_run):
    found = results.load(real_run / "results")
    found.rows = [r for r in found.rows if r.benchmark == WORK]
    run = report.summarize([commits.Commit(FAST, "fast")], found, Timings())
    assert run.exit_status() == EXIT_OK
    run.problems.append("interrupted")
    assert run.exit_status() == EXIT_FAILURE
    run.problems.clear()
    run.warnings.append("x.json: skipped")
    assert run.exit_status() == EXIT_FAILURE


# -- commits and the project description ----------------------------------------------------------------

def test_commit_selection_by_range_last_and_hashfile(tmp_path):
    repo, shas = make_repo(tmp_path / "r", [{"f": str(i)} for i in range(5)])
    assert [c.sha for c in commits.select(repo, commits.Selection(last=3))] == shas[2:]
    assert [c.sha for c in commits.select(repo, commits.Selection(range=f"{shas[1]}..{shas[3]}"))] == shas[2:4]
    assert [c.sha for c in commits.select(repo, commits.Selection(range=shas[0]))] == shas[:1]
    hashfile = tmp_path / "hashes"
    hashfile.write_text(f"{shas[4][:10]}\n\n{shas[0]} first\n")
    assert [c.sha for c in commits.select(repo, commits.Selection(hashfile=hashfile))] == [shas[4], shas[0]]
    with pytest.raises(UserError, match="unknown revision 'nope'"):
        commits.select(repo, commits.Selection(range="nope..HEAD"))
    with pytest.raises(UserError, match="holds no commits"):
        commits.select(repo, commits.Selection(range=f"{shas[3]}..{shas[3]}"))
    with pytest.raises(UserError, match="not a git repository"):
        commits.open_repo(tmp_path)


@pytest.mark.parametrize("pyproject, name, build, deps", [
    ('[build-system]\nrequires = ["hatchling>=1.21"]\nbuild-backend = "hatchling.build"\n'
     '[project]\nname = "a"\ndependencies = ["torch>=2", "numpy>=1.24", "Torch"]\n',
     "a", ["hatchling>=1.21"], ["numpy>=1.24"]),
    ('[build-system]\nrequires = ["flit_core>=3.4,<4"]\nbuild-backend = "flit_core.buildapi"\n[project]\nname = "b"\n',
     "b", ["flit_core>=3.4,<4"], []),
    ('[build-system]\nrequires = ["poetry-core>=1.0"]\nbuild-backend = "poetry.core.masonry.api"\n'
     '[tool.poetry]\nname = "c"\n[tool.poetry.dependencies]\npython = "^3.10"\ntorch = "*"\nrich = "*"\n',
     "c", ["poetry-core>=1.0"], ["rich"]),
    (None, "repo", ["setuptools>=40.8.0", "wheel"], []),
])
def test_the_project_is_read_from_its_pyproject_at_the_commit(tmp_path, pyproject, name, build, deps):
    files = {"README": "x"} if pyproject is None else {"pyproject.toml": pyproject}
    repo, shas = make_repo(tmp_path / "repo", [files])
    project = config.read_project(repo, shas[0], "repo")
    assert (project.name, project.build_requires, project.dependencies) == (name, build, deps)


def test_a_broken_pyproject_is_named(tmp_path):
    repo, shas = make_repo(tmp_path / "repo", [{"pyproject.toml": "[project\nname="}])
    with pytest.raises(UserError, match=r"pyproject.toml at .* is not valid TOML"):
        config.read_project(repo, shas[0], "repo")


def test_the_derived_config_points_asv_at_repo_and_output_and_loads_the_plugin(tmp_path):
    (tmp_path / "suite").mkdir()
    path = config.derive(repo=tmp_path / "lib", project=config.Project("mylib"), out=tmp_path / "out",
                         env_dir=tmp_path / "envs", benchmark_dir=tmp_path / "suite")
    conf = json.loads(path.read_text())
    assert conf["project"] == "mylib" and conf["repo"] == str(tmp_path / "lib")
    assert conf["results_dir"] == str(tmp_path / "out" / "results") and conf["env_dir"] == str(tmp_path / "envs")
    assert conf["plugins"] == [".torchbench.asv_bridge.plugin", ".torchbench.publish.publisher"]
    assert conf["matrix"]["req"]["torch"] == "2.13.0"  # pinned: never the CUDA build
    assert "--no-deps" in conf["install_command"][0] and "--no-deps" in conf["build_command"][0]
    with pytest.raises(UserError, match="no such benchmark folder"):
        config.derive(repo=tmp_path, project=config.Project("x"), out=tmp_path / "out", env_dir=tmp_path,
                      benchmark_dir=tmp_path / "missing")


# -- nothing is lost --------------------------------------------------------------------------------------

def test_a_second_holder_of_the_lock_is_refused_with_the_holder_named(tmp_path):
    with lock.exclusive(tmp_path):
        with pytest.raises(UserError, match=rf"in use by another torchbench run \(pid {os.getpid()}\)"):
            with lock.exclusive(tmp_path):
                pass
    with lock.exclusive(tmp_path):  # released
        pass


def test_the_lock_stays_held_by_a_child_that_inherited_it(tmp_path):
    """asv runs with the lock's descriptor: if we die first, asv still holds the folder."""
    with lock.exclusive(tmp_path) as fd:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], pass_fds=(fd,))
    try:
        with pytest.raises(UserError, match="in use"):
            with lock.exclusive(tmp_path):
                pass
    finally:
        child.kill()
        child.wait()
    with lock.exclusive(tmp_path):
        pass


def test_asv_results_are_written_atomically(tmp_path):
    from asv import util

    target = tmp_path / "r.json"
    target.write_text('{"old": true}')

    def dies_halfway(path, data, api_version=None, compact=False):
        Path(path).write_text('{"new": tr')
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        asv_plugin._atomic_write_json(dies_halfway, target, {"new": True})
    assert json.loads(target.read_text()) == {"old": True} and os.listdir(tmp_path) == ["r.json"]
    asv_plugin._atomic_write_json(util.write_json, target, {"new": True}, api_version=2)
    assert json.loads(target.read_text()) == {"new": True, "version": 2}


def test_the_next_holder_of_the_lock_clears_what_a_killed_writer_left(tmp_path):
    """SIGKILL between an atomic write and its rename leaves the hidden temporary; the next run removes it."""
    out = tmp_path / "out"
    (out / "results" / "m").mkdir(parents=True)
    (out / "results" / "m" / "a.json").write_text("{}")
    env = out / "env"
    with lock.exclusive(env, sweep=False):  # an environment folder inside: another lock's, left alone
        pass
    (env / ".pip-build.tmp").write_text("not ours")
    for tree in ("installs/0123abcd/pkg", "html/torchbench"):  # trees the sweep does not walk
        (out / tree).mkdir(parents=True)
        (out / tree / ".x.tmp").write_text("not walked")
    (out / "cache" / "site").mkdir(parents=True)  # one of ours, swept
    (out / "cache" / "site" / ".windows.pickle.1.tmp").write_text("half")
    writer = subprocess.Popen([sys.executable, "-c", (
        "import os, sys, time\n"
        "from torchbench_core import storage\n"
        "os.replace = lambda *a: (print('written', flush=True), time.sleep(600))\n"
        f"storage.atomic_write_text({str(out / 'results' / 'm' / 'b.json')!r}, '{{}}')\n")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "written"
    finally:
        writer.kill()
        writer.wait()
    left = [p for p in (out / "results" / "m").iterdir() if p.name.endswith(".tmp")]
    assert len(left) == 1 and left[0].name.startswith(".b.json.")
    with lock.exclusive(out):
        pass
    assert sorted(p.name for p in (out / "results" / "m").iterdir()) == ["a.json"]
    assert (env / ".pip-build.tmp").exists()
    assert not list((out / "cache").rglob("*.tmp"))
    assert all((out / tree / ".x.tmp").exists() for tree in ("installs/0123abcd/pkg", "html/torchbench"))


# -- the example ------------------------------------------------------------------------------------------

def test_the_example_is_made_from_its_patches_with_the_same_hashes_everywhere(tmp_path):
    one = example.materialize(tmp_path / "a")
    two = example.materialize(tmp_path / "b")
    head = git.Repo(one).head.commit
    assert head.hexsha == git.Repo(two).head.commit.hexsha
    history = list(git.Repo(one).iter_commits("HEAD"))
    assert len(history) == len(list(resources.example_patches().glob("*.patch"))) == 6
    project = config.read_project(git.Repo(one), head.hexsha, "tensorlib")
    assert project.name == "tensorlib" and project.build_requires[0].startswith("hatchling")
    assert (one / "benchmarks" / "bench_dispatch.py").exists()
    (one / "stray").write_text("x")  # a dirty copy is made again
    assert example.materialize(one) == one and not (one / "stray").exists()


# -- the command line -------------------------------------------------------------------------------------

def torchbench(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "torchbench", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


def test_bad_input_exits_2_with_a_message_that_names_it(tmp_path):
    repo, _ = make_repo(tmp_path / "lib", [{"f": "1"}])
    cases = [
        (["run", "--repo", str(tmp_path), "--out", str(tmp_path / "o")], "not a git repository"),
        (["run", "--repo", str(tmp_path / "lib"), "nope..HEAD", "--out", str(tmp_path / "o")],
         "unknown revision 'nope'"),
        (["run", "--repo", str(tmp_path / "lib"), "HEAD", "--last", "2", "--out", str(tmp_path / "o")],
         "give one of RANGE, --last and --hashfile"),
        (["run", "--existing", sys.executable, "--out", str(tmp_path / "o")], "--existing needs --repo"),
        (["run", "--rounds", "0", "--out", str(tmp_path / "o")], "argument --rounds: must be a whole number >= 1, not 0"),
        (["publish", "--out", str(tmp_path / "none")], "no asv.conf.json"),
    ]
    for args, message in cases:
        proc = torchbench(*args)
        assert proc.returncode == EXIT_FAILURE, (args, proc.stdout, proc.stderr)
        assert message in proc.stderr and "Traceback" not in proc.stderr, (args, proc.stderr)


def test_a_run_on_a_locked_output_folder_is_refused_at_once(tmp_path):
    repo, _ = make_repo(tmp_path / "lib", [{"f": "1"}])
    with lock.exclusive(tmp_path / "o"):
        start = time.perf_counter()
        proc = torchbench("run", "--repo", str(tmp_path / "lib"), "--out", str(tmp_path / "o"))
    assert proc.returncode == EXIT_FAILURE and "in use by another torchbench run" in proc.stderr
    assert time.perf_counter() - start < 60


def test_the_console_script_is_installed():
    exe = shutil.which("torchbench")
    assert exe is not None, "pip install -e . installs the torchbench command"
    proc = subprocess.run([exe, "--help"], capture_output=True, text=True)
    assert proc.returncode == 0 and "run" in proc.stdout and "publish" in proc.stdout


def test_the_repository_s_asv_config_and_the_packaged_base_agree():
    """asv.conf.json (this repository's own asv project) and torchbench/project/asv.conf.json (the base every
    run derives from, shipped in the wheel) are the same: the design card's benchmarks/ is the suite folder of
    both (a run sets its own)."""
    own = json.loads(config.strip_comments((ROOT / "asv.conf.json").read_text()))
    base = config.base_config()
    assert own["benchmark_dir"] == "benchmarks" and (ROOT / "benchmarks" / "__init__.py").is_file()
    assert own == base
