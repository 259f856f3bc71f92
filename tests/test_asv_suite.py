"""torchbench_core.asv_suite: the public way to write an asv suite from Timers."""

import math
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from torchbench_core import asv_suite
from torchbench_core.asv_suite import TimerSpec, TimerSuite

ROOT = Path(__file__).resolve().parents[1]


def spec(sub_label="Tensor", description="add", label="ops", num_threads=1, stmt="torch.add(x, x)"):
    return TimerSpec(stmt, setup="x = torch.ones(4)", label=label, sub_label=sub_label, description=description,
                     num_threads=num_threads)


def test_a_suite_gets_task_spec_params_and_a_track_benchmark():
    class Ops(TimerSuite):
        timers = [spec("Tensor", "add"), spec("Tensor", "mul", stmt="x * x"), spec("Sub", "add", num_threads=2)]
        min_run_time = 0.01

    assert Ops.param_names == ["label", "sub_label", "description", "num_threads"]
    assert Ops.params == [["ops"], ["Tensor", "Sub"], ["add", "mul"], [1, 2]]
    suite = Ops()
    suite.setup("ops", "Tensor", "mul", 1)
    result = suite.track_time("ops", "Tensor", "mul", 1)
    assert set(result) == {"samples", "number"} and result["number"] >= 1
    assert len(result["samples"]) >= 1 and all(0 < s < 1e-3 for s in result["samples"])
    with pytest.raises(NotImplementedError):  # asv: skipped, not failed
        suite.setup("ops", "Sub", "mul", 2)


def test_the_version_follows_the_statements_unless_pinned():
    def make(stmt, **attrs):
        return type("S", (TimerSuite,), {"timers": [spec(stmt=stmt)], **attrs})

    assert make("torch.add(x, x)").version == make("torch.add(x, x)").version
    assert make("torch.add(x, x)").version != make("torch.add(x, x, alpha=2)").version
    assert make("torch.add(x, x, alpha=2)", version="1").version == "1"


def test_bad_specs_fail_at_class_creation():
    with pytest.raises(ValueError, match="two specs share"):
        type("S", (TimerSuite,), {"timers": [spec(), spec()]})
    with pytest.raises(ValueError, match="lists no TimerSpec"):
        type("S", (TimerSuite,), {"timers": []})
    with pytest.raises(TypeError, match="expected TimerSpec"):
        type("S", (TimerSuite,), {"timers": ["torch.add(x, x)"]})
    with pytest.raises(ValueError, match="sub_label must be a non-empty string"):
        TimerSpec("x", label="a", sub_label="", description="d")
    with pytest.raises(ValueError, match="num_threads must be a positive integer"):
        TimerSpec("x", label="a", sub_label="b", description="d", num_threads=0)


def test_the_env_is_asv_environment_and_commit(monkeypatch):
    monkeypatch.setenv("ASV_ENV_NAME", "virtualenv-py3.11")
    monkeypatch.setenv("ASV_COMMIT", "0123456789abcdef")
    assert spec().timer().blocked_autorange(min_run_time=0.01).task_spec.env == "virtualenv-py3.11@01234567"
    monkeypatch.delenv("ASV_ENV_NAME")
    monkeypatch.delenv("ASV_COMMIT")
    assert asv_suite.asv_env() is None


def test_grouped_definitions_become_specs():
    from torchbench_core.grouped import GroupedSetup, GroupedStmts

    add = GroupedStmts("y = x + x", setup=GroupedSetup("x = torch.ones(3)"), signature="f(x) -> y", torchscript=True)
    specs = asv_suite.specs_from_grouped({"Pointwise": {"add": add}})
    keys = {(s.label, s.sub_label, s.description) for s in specs}
    assert keys == {("Pointwise", "add", "Eager Forward"), ("Pointwise", "add", "TorchScript Forward")}
    suite = type("Grouped", (TimerSuite,), {"timers": specs, "min_run_time": 0.01})
    result = suite().track_time("Pointwise", "add", "TorchScript Forward", 1)
    assert not math.isnan(result["samples"][0])


def write_suite(tmp_path: Path, module: str) -> Path:
    """A suite folder as a library author writes it: benchmarks/bench_ops.py holding MODULE."""
    suite = tmp_path / "benchmarks"
    suite.mkdir()
    (suite / "__init__.py").write_text("")
    (suite / "bench_ops.py").write_text(textwrap.dedent(module))
    return suite


def test_asv_discovers_the_suite_and_not_the_base_class(tmp_path):
    """asv_runner's own discovery, on a suite folder as a library author would write it."""
    suite = write_suite(tmp_path, """
        from torchbench_core.asv_suite import TimerSpec, TimerSuite, timer, track

        class Ops(TimerSuite):
            timers = [TimerSpec("x + x", setup="x = torch.ones(2)", label="ops", sub_label="Tensor",
                                description="add")]

        class ByHand:
            params = (["ops"], ["Tensor"], ["mul"], [1])
            param_names = ["label", "sub_label", "description", "num_threads"]

            def track_mul(self, label, sub_label, description, num_threads):
                return track(timer("x * x", "x = torch.ones(2)", label=label, sub_label=sub_label,
                                   description=description, num_threads=num_threads), 0.01)
        """)
    code = ("import sys; from asv_runner.discovery import disc_benchmarks; "
            f"sys.path.insert(0, {str(tmp_path)!r}); "
            f"print(sorted(b.name for b in disc_benchmarks({str(suite)!r})))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['bench_ops.ByHand.track_mul', 'bench_ops.Ops.track_time']"


def test_the_projects_own_suites_use_it():
    for path in (ROOT / "benchmarks").glob("*.py"):
        assert "_harness" not in path.read_text(), path
    assert "TimerSuite" in (ROOT / "benchmarks" / "torch_function.py").read_text()


def test_a_counts_suite_shares_the_timed_suites_parameters_and_rejects_anything_else():
    class Ops(TimerSuite):
        timers = [spec(), spec(sub_label="Sub")]

    class OpsCounts(asv_suite.CountsSuite):
        of = Ops

    assert (OpsCounts.params, OpsCounts.param_names, OpsCounts.version) == (Ops.params, Ops.param_names, Ops.version)
    assert OpsCounts.unit == "instructions" and hasattr(OpsCounts, "track_instructions")
    with pytest.raises(TypeError, match="expected a TimerSuite subclass"):
        type("Bad", (asv_suite.CountsSuite,), {"of": object})


@pytest.mark.slow
def test_a_counts_suite_counts_every_case_in_one_valgrind_process_under_asv_runner(tmp_path):
    """asv_runner's discovery and setup_cache, as an asv benchmark process runs them, with real valgrind."""
    suite = write_suite(tmp_path, """
        from torchbench_core.asv_suite import CountsSuite, TimerSpec, TimerSuite

        class Box:  # defined in the suite: pickled by reference, found again under valgrind
            x = list(range(10))

        class Ops(TimerSuite):
            timers = [TimerSpec("sum(x)", setup="x = list(range(10))", label="ops", sub_label="10", description="sum"),
                      TimerSpec("sum(x)", setup="x = list(range(1000))", label="ops", sub_label="1000",
                                description="sum"),
                      TimerSpec("sum(x)", setup="x = make.x", globals={"make": Box}, label="ops",
                                sub_label="box", description="sum")]

        class OpsCounts(CountsSuite):
            of = Ops
        """)
    # the suite's folder is on no import path, as in asv's own benchmark processes
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    worker = [sys.executable, "-m", "torchbench_core.asv_worker"]
    listed = subprocess.run([*worker, "list", str(suite)], capture_output=True, text=True, env=env, cwd=ROOT)
    assert listed.returncode == 0, listed.stderr
    import json

    names = {b["name"]: b for b in json.loads(listed.stdout)}
    assert set(names) == {"bench_ops.Ops.track_time", "bench_ops.OpsCounts.track_instructions"}
    jobs, out = tmp_path / "jobs.json", tmp_path / "out.jsonl"
    jobs.write_text(json.dumps([["bench_ops.OpsCounts.track_instructions", i] for i in range(3)]))
    proc = subprocess.run([*worker, "run", str(suite), "--jobs", str(jobs), "--out", str(out), "--cache-dir",
                           str(tmp_path)], capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
    assert proc.returncode == 0, proc.stderr
    results = [json.loads(line) for line in out.read_text().splitlines() if '"job"' in line]
    by_size = {}
    for r in results:
        assert r["number"] == 100 and len(r["samples"]) == 3, r
        assert max(r["samples"]) - min(r["samples"]) < 0.01 * min(r["samples"])  # counts repeat
        by_size[r["job"][1]] = min(r["samples"])
    # params are a product: ("10",) is index 0, ("1000",) 1, ("box",) 2; summing 1000 items costs far more.
    # The suite's own class as a global: asv imports the suite by its folder, not sys.path, and the
    # valgrind worker must find it the same way ("No module named 'suite'" before)
    assert by_size[1] > 20 * by_size[0] > 0
    assert 0.9 * by_size[0] < by_size[2] < 1.5 * by_size[0]
    assert len(list(tmp_path.glob("*.pickle"))) == 1  # one setup_cache, one valgrind process, for both


def worker_run(suite: Path, jobs: Path, out: Path, extra: dict) -> list[dict]:
    """The worker's `run` of JOBS in the suite (environment: EXTRA besides the harness): each job's result."""
    import json

    env = {"PYTHONPATH": f"{ROOT}:{suite.parent}", "PATH": "/usr/bin:/bin", **extra}
    proc = subprocess.run([sys.executable, "-m", "torchbench_core.asv_worker", "run", str(suite), "--jobs", str(jobs),
                           "--out", str(out)], capture_output=True, text=True, env=env, cwd=suite.parent, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return [r for r in map(json.loads, out.read_text().splitlines()) if "job" in r]


def test_the_worker_reports_each_jobs_seconds_and_takes_allocated_run_times(tmp_path):
    """`torchbench alert` sets a case's seconds of blocks a process through TORCHBENCH_RUN_TIMES (an
    environment variable, so an older commit's worker ignores it); every result says how long its job took."""
    import json

    suite = write_suite(tmp_path, """
        from torchbench_core.asv_suite import TimerSpec, TimerSuite

        class Ops(TimerSuite):
            timers = [TimerSpec("sum(x)", setup="x = list(range(10))", label="ops", sub_label="10",
                                description="sum")]
            min_run_time = 0.05
        """)
    jobs, times = tmp_path / "jobs.json", tmp_path / "times.json"
    jobs.write_text(json.dumps([["bench_ops.Ops.track_time", 0]]))
    times.write_text(json.dumps({"bench_ops.Ops.track_time|0": 0.5}))
    timed = {}
    for name, extra in (("default", {}), ("allocated", {"TORCHBENCH_RUN_TIMES": str(times)})):
        (result,) = worker_run(suite, jobs, tmp_path / f"{name}.jsonl", extra)
        timed[name] = sum(result["samples"]) * result["number"]
        assert result["elapsed"] >= timed[name] > 0
    assert 0.04 <= timed["default"] < 0.25 and 0.45 <= timed["allocated"] < 1.0, timed


def test_a_plain_time_method_is_timed_for_its_allotted_seconds_with_asv_semantics_kept(tmp_path):
    """A plain asv `time_` method gets the seconds a TimerSuite case gets (0.2 s a process, or what
    TORCHBENCH_RUN_TIMES allots), in samples of many calls each after its setup, where asv alone would time
    one call a sample and at most 10 samples; a short allotment is cut into samples of a 25th of it (asv's
    10 ms samples would give 50 ms 2-5), after a warm-up of five samples (asv's is 0.1 s, twice that
    allotment). A `number`, `repeat`, `sample_time` and `warmup_time` the suite sets are kept."""
    import json

    suite = write_suite(tmp_path, """
        class Fresh:
            def setup(self):
                self.items = [1]

            def time_pop(self):
                self.items.pop()  # IndexError unless the setup runs before every call

        class Pinned:
            number, repeat = 3, 4

            def setup(self):
                self.items = [1]

            def time_pop(self):
                self.items.pop()

        class Warm:
            warmup_time, sample_time = 0.6, 0.02

            def time_sum(self):
                sum(range(100))

        def time_sum():
            sum(range(100))
        """)
    jobs, times, short = tmp_path / "jobs.json", tmp_path / "times.json", tmp_path / "short.json"
    names = ["bench_ops.Fresh.time_pop", "bench_ops.Pinned.time_pop", "bench_ops.Warm.time_sum",
             "bench_ops.time_sum"]
    jobs.write_text(json.dumps([[n, 0] for n in names]))
    times.write_text(json.dumps({f"{n}|0": 1.0 for n in names}))
    short.write_text(json.dumps({f"{n}|0": 0.05 for n in names}))
    results = {}
    for name, extra in (("default", {}), ("allotted", {"TORCHBENCH_RUN_TIMES": str(times)}),
                        ("short", {"TORCHBENCH_RUN_TIMES": str(short)})):
        for r in worker_run(suite, jobs, tmp_path / f"{name}.jsonl", extra):
            assert "samples" in r, r  # no IndexError: each call had its setup
            results[name, r["job"][0]] = r
    for job in ("bench_ops.Fresh.time_pop", "bench_ops.time_sum"):
        default, allotted, shorter = (results[name, job] for name in ("default", "allotted", "short"))
        assert default["number"] > 10 and allotted["number"] > 10, (default, allotted)  # many calls a sample
        assert 0.2 <= default["elapsed"] < 0.9 and 1.0 <= allotted["elapsed"] < 2.0, (default, allotted)
        # the seconds spent in samples follow the allotment (the count of samples alone varies with the
        # calls a sample that each process calibrates, which load on the machine moves)
        timed = {name: r["number"] * sum(r["samples"]) for name, r in (("default", default), ("allotted", allotted))}
        assert timed["allotted"] > 2 * timed["default"] and len(default["samples"]) > 10, (timed, default, allotted)
        # 2 ms samples: about 25 in 50 ms (fewer on a loaded machine, where the per-call setup's share grows:
        # 10 seen in CI), where asv's own 10 ms samples give at most 5
        assert len(shorter["samples"]) >= 8 and 0.05 <= shorter["elapsed"], shorter
    for name in ("default", "allotted", "short"):
        pinned = results[name, "bench_ops.Pinned.time_pop"]
        assert pinned["number"] == 3 and len(pinned["samples"]) == 4, pinned
        warm = results[name, "bench_ops.Warm.time_sum"]  # the suite's warm-up and 20 ms samples
        assert warm["elapsed"] >= 0.6 and 0.015 <= sum(warm["samples"]) / len(warm["samples"]) * warm["number"], warm
    shorter = results["short", "bench_ops.Warm.time_sum"]
    assert len(shorter["samples"]) <= 4, shorter  # 50 ms of 20 ms samples (at least 2, asv's minimum)


def test_a_benchmark_past_the_timeout_its_suite_sets_fails_alone_and_the_process_goes_on(tmp_path):
    """asv's `timeout`: asv kills a benchmark's process past it and records a failure. The worker runs many
    benchmarks a process: the one past its timeout (set-up included) fails with a message saying so, its
    teardown runs, and the next job is measured; a benchmark within its timeout is untouched."""
    import json

    suite = write_suite(tmp_path, """
        import time

        class Slow:
            timeout = 0.5

            def setup(self):  # asv re-runs it, and the teardown, around every timed call
                with open("calls", "a") as f:
                    f.write("setup\\n")
                time.sleep(0.3)

            def time_sleep(self):
                time.sleep(0.1)  # each call within the timeout, the set-ups and the samples past it

            def teardown(self):
                with open("calls", "a") as f:
                    f.write("teardown\\n")

        class Quick:
            timeout = 30

            def time_sum(self):
                sum(range(100))
        """)
    jobs = tmp_path / "jobs.json"
    jobs.write_text(json.dumps([["bench_ops.Slow.time_sleep", 0], ["bench_ops.Quick.time_sum", 0]]))
    slow, quick = worker_run(suite, jobs, tmp_path / "out.jsonl", {})
    assert "timed out after 0.5 s (its asv timeout), set-up included" in slow["error"], slow
    assert 0.5 <= slow["elapsed"] < 5, slow
    assert (tmp_path / "calls").read_text().splitlines()[-1] == "teardown"  # the last set-up was torn down
    assert quick["job"] == ["bench_ops.Quick.time_sum", 0] and quick["samples"], quick


def test_the_harness_link_is_out_of_reach_of_pip_installing_a_project_that_ships_torchbench_core(tmp_path):
    """torchbench measuring its own history installs commits that ship torchbench_core into the asv
    environment. pip writes (and uninstalls) site-packages/torchbench_core/*: had the harness link been there,
    it would have overwritten the user's checkout through it (it did, before the link moved)."""
    import venv

    from torchbench import resources
    from torchbench.asv_bridge.driver import link_harness

    venv.create(tmp_path / "env", with_pip=False)
    python = tmp_path / "env" / "bin" / "python"
    purelib = next((tmp_path / "env" / "lib").glob("python3.*/site-packages"))
    (purelib / "torchbench_core").symlink_to(resources.harness(), target_is_directory=True)  # the old layout
    link_harness(python)
    link_harness(python)  # idempotent
    assert not (purelib / "torchbench_core").exists()
    find = ["-c", "import importlib.util; print(importlib.util.find_spec('torchbench_core').origin)"]
    where = subprocess.run([str(python), *find], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"},
                           cwd=tmp_path)
    assert Path(where.stdout.strip()).resolve() == resources.harness() / "__init__.py", where.stderr
    # what pip does when it installs a project that ships the package: files in site-packages/torchbench_core
    (purelib / "torchbench_core").mkdir()
    (purelib / "torchbench_core" / "__init__.py").write_text("SHIPPED = True\n")
    assert not (resources.harness() / "__init__.py").read_text().startswith("SHIPPED")
    shipped = subprocess.run([str(python), *find], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"},
                             cwd=tmp_path)
    assert shipped.stdout.strip() == str(purelib / "torchbench_core" / "__init__.py"), shipped.stderr  # it wins


@pytest.mark.slow
def test_a_plain_asv_suite_is_counted_call_by_call_with_asv_setup_outside_the_count(tmp_path):
    """time_ methods as asv documents them (params, setup, setup_cache; no torchbench_core import), counted
    in one valgrind process by the worker's `counts`; what cannot be counted says why."""
    import json

    seen = tmp_path / "frozen.txt"
    suite = write_suite(tmp_path, """
        import gc
        import random
        import sys
        import time

        TABLE = [(i,) for i in range(1000)]  # a library's module-level data, made at import

        class Lists:
            params = [[1, 2]]
            param_names = ["copies"]

            def setup_cache(self):
                return 500  # the length of every list below: made outside valgrind, used inside

            def setup(self, n, copies):
                if sys.argv[0].endswith("_callgrind_worker.py") and not getattr(Lists, "seen", False):
                    Lists.seen = True  # in the valgrind process, once: is the import's data out of gc's reach?
                    with open(SEEN, "a") as f:
                        f.write(str(any(o is TABLE for o in gc.get_objects())))
                self.data = list(range(n)) * copies
                random.Random(0).shuffle(self.data)
                self.heavy = sum(range(200_000))  # costly set-up: outside the count

            def time_sort(self, n, copies):
                self.data.sort()  # sorts in place: only a setup before every call keeps it unsorted

            def time_sorted(self, n, copies):
                sorted(self.data)

            def time_raises(self, n, copies):
                raise ValueError("broken on purpose")

            def track_length(self, n, copies):
                return len(self.data)

        class Plain:
            def time_sum(self):
                sum(range(1000))

            def timeraw_import(self):
                return "import json"
        """.replace("SEEN", repr(str(seen))))
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    worker = [sys.executable, "-m", "torchbench_core.asv_worker"]
    listed = subprocess.run([*worker, "list", str(suite)], capture_output=True, text=True, env=env, cwd=ROOT)
    assert listed.returncode == 0, listed.stderr
    why = {b["name"]: b["uncountable"] for b in json.loads(listed.stdout)}
    assert why == {"bench_ops.Lists.time_sort": "", "bench_ops.Lists.time_sorted": "",
                   "bench_ops.Lists.time_raises": "", "bench_ops.Plain.time_sum": "",
                   "bench_ops.Lists.track_length": "",  # it might time a Timer: `counts` tells
                   "bench_ops.Plain.timeraw_import": "timeraw_ times a fresh interpreter of its own"}
    jobs, out = tmp_path / "jobs.json", tmp_path / "counts.json"
    wanted = [[f"bench_ops.Lists.{m}", i] for m in ("time_sort", "time_sorted", "time_raises", "track_length")
              for i in (0, 1)] + [["bench_ops.Plain.time_sum", 0], ["bench_ops.Plain.timeraw_import", 0]]
    # plans (calls per counted run, warm-up calls), made natively: for the countable time_ jobs only
    jobs.write_text(json.dumps(wanted))
    proc = subprocess.run([*worker, "plan", str(suite), "--jobs", str(jobs), "--out", str(out)],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    plans = json.loads(out.read_text())
    assert set(plans) == {f"bench_ops.Lists.time_{m}|{i}" for m in ("sort", "sorted", "raises") for i in (0, 1)} | {
        "bench_ops.Plain.time_sum|0"}
    assert "ValueError: broken on purpose" in plans["bench_ops.Lists.time_raises|0"]["error"]
    for key, plan in plans.items():
        if "plan" in plan:
            number, warmup = plan["plan"]
            assert 1 <= number <= 64 and 8 <= warmup <= 128 and number & (number - 1) == 0, (key, plan)
    # a job that carries its plan is counted under it (the parent's one plan for every commit)
    wanted = [[*job, 2, 8] if job == ["bench_ops.Plain.time_sum", 0] else job for job in wanted]
    jobs.write_text(json.dumps(wanted))
    proc = subprocess.run([*worker, "counts", str(suite), "--jobs", str(jobs), "--out", str(out)],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert set(result) == {f"{n}|{i}" for n, i, *_ in wanted}
    assert result["bench_ops.Plain.time_sum|0"]["plan"] == [2, 8]
    assert result["bench_ops.Lists.time_sort|0"]["plan"][0] in (1, 2, 4, 8, 16, 32, 64)  # planned there
    counts = {key: r["counts"] for key, r in result.items() if "counts" in r}
    assert set(counts) == {f"bench_ops.Lists.time_{m}|{i}" for m in ("sort", "sorted") for i in (0, 1)} | {
        "bench_ops.Plain.time_sum|0"}
    for key, values in counts.items():
        # two counted runs where they agree (asv_worker.REPEATS_AGREE), else three
        assert len(values) in (2, 3) and min(values) > 0, key
        assert max(values) - min(values) < 0.02 * min(values), (key, values)  # counts repeat
    per = {key: min(values) for key, values in counts.items()}
    sort, sorted_ = "bench_ops.Lists.time_sort|{}", "bench_ops.Lists.time_sorted|{}"
    for i in (0, 1):
        # setup re-runs before every counted call (asv's semantics): each in-place sort sorts a shuffled list,
        # as costly as sorting a copy; left sorted after the first call, later calls would cost a tenth
        assert 0.8 < per[sort.format(i)] / per[sorted_.format(i)] < 1.25, per
    # twice the items (setup_cache's length times the parameter) cost about twice as much: the set-up's
    # 200,000-item sum, millions of instructions alike for both, is not in the count of the sort
    assert 1.8 < per[sort.format(1)] / per[sort.format(0)] < 2.6, per
    assert "ValueError: broken on purpose" in result["bench_ops.Lists.time_raises|0"]["error"]
    # the suite's imports were frozen before the first case (CallCase.prepare): the collection before each
    # counted run does not walk a library's module-level data (a 200,000-tuple list cost a 64-row suite a
    # quarter of its counting)
    assert seen.read_text() == "False"
    assert result["bench_ops.Lists.track_length|1"] == {
        "uncountable": "track_ returns its own measurement and times no Timer"}
    assert result["bench_ops.Plain.timeraw_import|0"] == {
        "uncountable": "timeraw_ times a fresh interpreter of its own"}


def test_a_setup_slower_than_a_sample_is_not_timed_again_to_choose_the_calls_a_sample(tmp_path):
    """Issue 63: where a `time_` method's setup alone takes a sample's time or more (a suite whose setups run
    a 15 s forward pass), a sample is one call, as asv times it, without three calls (each after its setup)
    timed first to choose that: every call the method gets is one of its samples (the suite sets no warm-up)."""
    import json

    suite = write_suite(tmp_path, """
        import os
        import time

        class Slow:
            warmup_time = 0

            def setup(self):
                time.sleep(0.03)  # longer than a sample (at most asv's 10 ms)

            def time_call(self):
                with open(os.environ["CALLS_LOG"], "a") as f:
                    f.write("call\\n")
        """)
    jobs, log = tmp_path / "jobs.json", tmp_path / "calls.txt"
    jobs.write_text(json.dumps([["bench_ops.Slow.time_call", 0]]))
    (result,) = worker_run(suite, jobs, tmp_path / "out.jsonl", {"CALLS_LOG": str(log)})
    assert result["number"] == 1 and len(result["samples"]) >= 2, result
    assert log.read_text().count("call\n") == len(result["samples"]), result
