"""asv end to end: a throwaway repository with two commits, the second slower.

Real asv, real per-commit virtualenv environments (built once for the
session: torch is installed into them from the pinned CPU wheel), real
result files.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import git
import pytest

ROOT = Path(__file__).resolve().parents[1]
SLOWLIB_FAST = "def work(n):\n    return sum(range(n))\n"
SLOWLIB_SLOW = "def work(n):\n    return sum(sum(range(n)) for _ in range(4))\n"


@pytest.fixture(scope="session")
def history(tmp_path_factory):
    base = tmp_path_factory.mktemp("asv")
    repo_dir = base / "slowlib"
    (repo_dir / "slowlib").mkdir(parents=True)
    (repo_dir / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=68", "wheel"]\nbuild-backend = "setuptools.build_meta"\n\n'
        '[project]\nname = "slowlib"\nversion = "0.1"\n')
    repo = git.Repo.init(repo_dir)
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "test").set_value("user", "email", "test@example.com")
    commits = []
    for body, message in ((SLOWLIB_FAST, "fast"), (SLOWLIB_SLOW, "four times the work")):
        (repo_dir / "slowlib" / "__init__.py").write_text(body)
        repo.index.add(["pyproject.toml", "slowlib/__init__.py"])
        commits.append(repo.index.commit(message).hexsha)
    out = base / "out"
    proc = subprocess.run(
        [sys.executable, "-m", "torchbench.history", "--repo", str(repo_dir), "--commits", "2",
         "--benchmarks", str(ROOT / "tests" / "e2e_benchmarks"), "--out", str(out)],
        capture_output=True, text=True, cwd=ROOT, timeout=1800)
    return proc, out, commits


def result_files(out, commits):
    files = {}
    for path in (out / "results").glob("*/*.json"):
        if path.name != "machine.json":
            doc = json.loads(path.read_text())
            files[doc["commit_hash"]] = doc
    assert set(files) == set(commits)
    return files


def test_history_runs_and_publishes(history):
    proc, out, _ = history
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert (out / "html" / "index.html").exists()
    assert "where the time went" in proc.stdout and "environment build" in proc.stdout


def test_result_files_hold_samples_and_task_spec_metadata(history):
    _, out, commits = history
    for doc in result_files(out, commits).values():
        columns = doc["result_columns"]
        row = dict(zip(columns, doc["results"]["bench_slowlib.Work.track_work"]))
        assert row["params"] == [["'slowlib'"], ["'work(200)'"], ["'sum of a range'"], ["1"]]
        (samples,) = row["samples"]
        assert len(samples) >= 5 and all(s > 0 for s in samples)
        assert row["stats_q_25"][0] <= row["result"][0] <= row["stats_q_75"][0]
        assert "torch2.13.0" in doc["env_name"]
    benchmarks = json.loads((out / "results" / "benchmarks.json").read_text())
    assert benchmarks["bench_slowlib.Work.track_work"]["param_names"] == ["label", "sub_label", "description",
                                                                          "num_threads"]


def test_crashing_and_hanging_benchmarks_fail_alone(history):
    proc, out, commits = history
    for doc in result_files(out, commits).values():
        columns = doc["result_columns"]
        for name in ("bench_slowlib.track_crashes", "bench_slowlib.track_hangs"):
            assert dict(zip(columns, doc["results"][name]))["result"] in (None, [None])
        assert dict(zip(columns, doc["results"]["bench_slowlib.Work.track_work"]))["result"][0] > 0
    assert "some benchmarks failed" in proc.stdout


def test_the_slowdown_is_visible_in_asv_compare(history):
    proc, out, commits = history
    fast, slow = (result_files(out, commits)[c] for c in commits)
    value = lambda doc: dict(zip(doc["result_columns"], doc["results"]["bench_slowlib.Work.track_work"]))["result"][0]  # noqa: E731
    assert value(slow) > 2 * value(fast)
    # asv compare (run by the history command) marks it worse and significant.
    row = next(line for line in proc.stdout.splitlines() if line.startswith("|") and "track_work" in line)
    assert row.startswith("| +") and "±" in row, row  # worse, with statistics
    assert "Benchmarks that have got worse" in proc.stdout
    # --fail-on-regression reads the same table (asv compare itself exits 0).
    from torchbench.history import regressions

    (flagged,) = regressions(proc.stdout)
    assert "track_work" in flagged


def test_the_project_suite_passes_asv_check():
    proc = subprocess.run([sys.executable, "-m", "asv", "check", "-E", f"existing:{sys.executable}"],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0 and "No problems found" in proc.stdout, proc.stdout + proc.stderr


def test_the_published_site_needs_no_internet(history):
    _, out, _ = history
    index = (out / "html" / "index.html").read_text()
    assert "code.jquery.com" not in index and "cdnjs.cloudflare.com" not in index
    assert (out / "html" / "vendor" / "jquery.min.js").exists()


def test_the_published_site_renders_in_a_real_browser(history):
    """Headless Chromium over loopback: the benchmark grid, not asv's
    'continental origin of swallow' page for scripts that failed to load."""
    import http.server
    import shutil
    import threading
    from functools import partial

    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("chromium is not installed (scripts/test.sh installs the Debian package)")
    _, out, _ = history
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
    dom = proc.stdout
    assert "continental origin of swallow" not in dom
    assert "Work.track_work" in dom and "bench_slowlib" in dom
