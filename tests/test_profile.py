"""`torchbench profile` and its flame graphs: real py-spy, real benchmarks, a real browser.

The pure parts (collapsed stacks, the differential tree, the page's escaping)
are checked on hand-made stacks with known answers; the recording on this
repository's own overhead suite, run by this interpreter; the command end to
end on the example library's regressing commit and its parent, in a real asv
environment, its differential page opened from disk in headless chromium.
"""

import json
import os
import re
import shutil
import site
import subprocess
import sys
from pathlib import Path

import git
import pytest

import torchbench.cli
from torchbench.profiling import record as profile
from torchbench.project import commits, example
from torchbench.profiling import flamegraph as fg
from torchbench.asv_bridge.driver import harness_env
from torchbench.asv_bridge.worker import list_benchmarks

ROOT = Path(__file__).resolve().parents[1]
NPM_CACHE = Path.home() / ".cache" / "torchbench" / "npm"
OVERHEAD = "torch_function.TorchFunctionOverhead.track_time"
# What py-spy --native writes for torch.add's C++ entry point (torch 2.x, Linux)
ADD_FRAME = "torch::autograd::THPVariable_add (libtorch_python.so)"
XSS = '</script><script>document.documentElement.setAttribute("data-pwned", "1")</script>'


def frame_share(svg: str, frame: str) -> float:
    """The widest share (percent of samples) of a frame in a flame graph SVG of ours, 0 if absent."""
    escaped = re.escape(frame.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))
    shares = [float(m) for m in re.findall(rf"<title>{escaped} \(\d+ samples, ([\d.]+)%\)</title>", svg)]
    return max(shares, default=0.0)


def nodes(tree: dict):
    yield tree
    for child in tree["children"]:
        yield from nodes(child)


def write_profile(out: Path, sha: str, stacks: dict[str, int], subject: str = "") -> fg.Profile:
    """A stored profile made by hand, as `torchbench profile` stores one."""
    p = fg.location(out, sha, "suite.Bench.time_x", 0)
    p.collapsed.parent.mkdir(parents=True, exist_ok=True)
    p.collapsed.write_text("".join(f"{s} {n}\n" for s, n in stacks.items()))
    p.svg.write_text(fg.render_svg(stacks, title="t"))
    p.meta.write_text(json.dumps({"commit": sha, "subject": subject, "duration": 1.0}))
    return p


# -- collapsed stacks and the differential tree -----------------------------------------------------

def test_collapsed_stacks_parse_add_up_and_name_a_bad_line(tmp_path):
    path = tmp_path / "x.collapsed"
    path.write_text("main (a.py:3);f (a.py:9) 5\nmain (a.py:3);g (b.so) 2\n\nmain (a.py:3);f (a.py:9) 1\n")
    assert fg.read_collapsed(path) == {"main (a.py:3);f (a.py:9)": 6, "main (a.py:3);g (b.so)": 2}
    path.write_text("main (a.py:3) 5\nmain;f seven\n")
    with pytest.raises(ValueError, match=r"x\.collapsed, line 2"):
        fg.read_collapsed(path)


def test_normalise_drops_load_addresses_and_line_numbers():
    stacks = {"0x7f1a2b (libc.so.6);main (a.py:3);f (a.py:9)": 2, "0x7f9999 (libc.so.6);main (a.py:4);f (a.py:10)": 3,
              "0x7f1a2b (libc.so.6);at::add (libtorch_cpu.so)": 1}
    assert fg.normalise(stacks) == {"?? (libc.so.6);main (a.py);f (a.py)": 5,
                                    "?? (libc.so.6);at::add (libtorch_cpu.so)": 1}
    assert fg.normalise(stacks, line_numbers=True)["?? (libc.so.6);main (a.py:4);f (a.py:10)"] == 3


def test_differential_tree_scales_base_to_heads_total():
    base = {"a;b": 2, "a;c": 2}  # 4 samples
    head = {"a;b": 6, "a;d": 2}  # 8 samples: base counts double
    assert fg.differential_tree(base, head) == {
        "name": "all", "value": 8, "delta": 0.0, "children": [
            {"name": "a", "value": 8, "delta": 0.0, "children": [
                {"name": "b", "value": 6, "delta": 2.0, "children": []},  # 6 - 2 * 2
                {"name": "d", "value": 2, "delta": 2.0, "children": []},  # new in head: delta == value
            ]},  # c (only in base) is not drawn: a's +2 +2 is offset by c's -4
        ]}


def test_differential_tree_of_a_profile_with_itself_is_flat_and_of_nothing_is_all_new():
    stacks = {"a;b;c": 3, "a;b": 1, "x": 5}
    assert all(n["delta"] == 0 for n in nodes(fg.differential_tree(stacks, stacks)))
    assert all(n["delta"] == n["value"] for n in nodes(fg.differential_tree({}, stacks)))
    assert [n["value"] for n in nodes(fg.differential_tree(stacks, stacks))] == [9, 4, 4, 3, 5]


def test_case_stacks_keep_only_the_cases_loop_and_below():
    raw = {"?? (libc.so.6);main (w.py:1);torchbench_profile_0 (w.py:9);f (x.py:1)": 4,
           "?? (libc.so.6);main (w.py:1);torchbench_profile_1 (w.py:9);g (x.py:2)": 3,
           "?? (libc.so.6);main (w.py:1);torchbench_profile_0 (w.py:9)": 1,
           "?? (libc.so.6);main (w.py:1);read (libc.so.6)": 7}
    assert profile.case_stacks(raw, "torchbench_profile_0") == {"torchbench_profile (w.py:9);f (x.py:1)": 4,
                                                               "torchbench_profile (w.py:9)": 1}


def test_default_selection_is_the_torch_function_timer_suite_cases():
    listing = [
        {"name": "a.Dispatch.track_time", "timer_suite": True, "param_names": ["label", "sub_label"],
         "params": [["'__torch_function__ dispatch'", "'other'"], ["'Tensor'", "'TensorLike'"]]},
        {"name": "b.Plain.time_x", "timer_suite": False, "param_names": [], "params": []},
    ]
    assert [c.key for c in profile.select_cases(listing, [])] == [("a.Dispatch.track_time", 0),
                                                                  ("a.Dispatch.track_time", 1)]
    assert profile.select_cases(listing, [])[1].title == \
        "a.Dispatch.track_time [1] (__torch_function__ dispatch, TensorLike)"
    assert [c.key for c in profile.select_cases(listing, ["Plain"])] == [("b.Plain.time_x", 0)]
    assert len(profile.select_cases(listing, ["Dispatch"])) == 4  # -b: every combination


# -- the differential page ---------------------------------------------------------------------------

def test_the_differential_page_embeds_the_tree_safely_and_escapes_the_title(tmp_path):
    base = write_profile(tmp_path / "b", "1" * 40, {"main;f": 4})
    head = write_profile(tmp_path / "h", "2" * 40, {"main;f": 4, f"main;{XSS}": 4}, subject="<i>head</i>")
    page = tmp_path / "diff.html"
    fg.write_differential_page(base, head, page, "../vendor/flamegraph", "f <b>grew</b> & more")
    text = page.read_text()
    assert "f &lt;b&gt;grew&lt;/b&gt; &amp; more" in text and "&lt;i&gt;head&lt;/i&gt;" in text
    # five script elements (the tree, d3, d3-flame-graph, its colours, ours): the name ended none
    assert "data-pwned" in text and "<script>document" not in text and text.count("</script>") == 5
    embedded = re.search(r'<script type="application/json" id="flamegraph-tree">(.*?)</script>', text, re.S)
    tree = json.loads(embedded.group(1))  # JSON reads \u003c back as <, as JSON.parse does
    assert [n["name"] for n in nodes(tree)] == ["all", "main", XSS, "f"]
    assert {n["name"]: n["delta"] for n in nodes(tree)}[XSS] == 4  # new in head
    assert 'src="../vendor/flamegraph/d3-flamegraph.min.js"' in text


@pytest.fixture(scope="module")
def chromium():
    path = shutil.which("chromium")
    if path is None:
        pytest.fail("chromium is not installed (scripts/test.sh installs the Debian package)")
    return path


def dump_dom(chromium: str, page: Path, profile_dir: Path) -> str:
    proc = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           f"--user-data-dir={profile_dir}", "--allow-file-access-from-files",
                           "--virtual-time-budget=5000", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def vendored(html_dir: Path) -> str:
    if shutil.which("npm") is None:
        pytest.fail("npm is not installed: d3-flame-graph cannot be vendored")
    return fg.vendor_assets(html_dir, NPM_CACHE)


def test_the_differential_page_renders_from_disk_in_a_browser(tmp_path, chromium):
    html_dir = tmp_path / "html"
    rel = vendored(html_dir)
    base = write_profile(tmp_path, "1" * 40, {"main;grows": 2, "main;shrinks": 6})
    head = write_profile(tmp_path, "2" * 40, {"main;grows": 6, "main;shrinks": 1, f"main;{XSS}": 1})
    page = html_dir / "profiles" / "diff.html"
    fg.write_differential_page(base, head, page, f"../{rel}", "grows vs shrinks")
    dom = dump_dom(chromium, page, tmp_path / "chrome")
    fills = dict(re.findall(r'<g[^>]*name="([^"]*)"[^>]*><rect[^>]*fill="(rgb\([^)]*\))"', dom))
    assert set(fills) >= {"all", "main", "grows", "shrinks"}, dom[-3000:]
    r, g, b = map(int, re.findall(r"\d+", fills["grows"]))
    assert r == 220 and g == b < 200  # red: more samples in head (base scaled to head's 8: 2 -> 1.6)
    r, g, b = map(int, re.findall(r"\d+", fills["shrinks"]))
    assert b == 220 and r == g < 100  # blue: 1 in head against 6 * 8/8
    assert fills["all"] == "rgb(220,220,220)"  # no change at the root, by construction
    assert "&lt;/script&gt;&lt;script&gt;document" in dom  # the frame name shown as text
    assert "data-pwned=" not in dom.split("<head>")[0]  # ... and never run


# -- recording, with this interpreter and this repository's overhead suite ---------------------------

@pytest.fixture(scope="module")
def own_suite_profiles(tmp_path_factory):
    """Tensor and WithTorchFunction of benchmarks/torch_function.py, 1 s each, in this interpreter."""
    pyspy = shutil.which("py-spy")
    if pyspy is None:
        pytest.fail("py-spy is not installed: scripts/install.sh installs it")
    out = tmp_path_factory.mktemp("own")
    commit = commits.Commit("0" * 40, "this working tree")
    report = profile.profile_cases(Path(sys.executable), ROOT / "benchmarks", harness_env(), commit, out, pyspy=pyspy,
                                   only=lambda c: c.params["sub_label"] in ("'Tensor'", "'WithTorchFunction'"),
                                   seconds=1.0)
    return out, report, commit


def test_default_cases_of_the_own_suite_are_its_four_timer_cases():
    listing = list_benchmarks(Path(sys.executable), ROOT / "benchmarks", harness_env())
    cases = profile.select_cases(listing, [])
    assert {c.benchmark for c in cases} == {OVERHEAD}
    assert [c.params["sub_label"] for c in cases] == ["'Tensor'", "'SubTensor'", "'WithTorchFunction'",
                                                      "'SubWithTorchFunction'"]


def test_a_real_profile_of_torch_add_is_mostly_torch_add(own_suite_profiles):
    out, report, commit = own_suite_profiles
    assert (report.recorded, report.failures) == (2, [])
    found = fg.available(out)
    assert set(found) == {(commit.sha, OVERHEAD, 0), (commit.sha, OVERHEAD, 2)}
    tensor = found[(commit.sha, OVERHEAD, 0)]
    meta = tensor.metadata()
    assert meta["params"]["sub_label"] == "'Tensor'" and meta["rate"] == 200 and 0.9 < meta["duration"] < 1.5
    assert "--native" in meta["py_spy_command"] and meta["py_spy_command"][1] == "record"
    stacks = fg.read_collapsed(tensor.collapsed)
    assert sum(stacks.values()) == meta["samples"] >= 100  # 200 Hz for 1 s, less what sampling pauses cost
    assert all(s.startswith("torchbench_profile (torchbench_core/asv_worker.py:") for s in stacks)
    svg = tensor.svg.read_text()
    assert svg.startswith("<?xml") and "</svg>" in svg
    # the loop is torch.add: its C++ entry point is the largest share (46-60% of ~200 samples in runs
    # here; the rest is the timing loop and sampling noise), and its kernel is under it
    assert frame_share(svg, ADD_FRAME) > 30, svg[:3000]
    assert frame_share(svg, "at::_ops::add_Tensor::call (libtorch_cpu.so)") > 5


def test_a_real_profile_shows_the_python_torch_function_under_torch_add(own_suite_profiles):
    out, _, commit = own_suite_profiles
    profile_2 = fg.location(out, commit.sha, OVERHEAD, 2)
    assert profile_2.metadata()["params"]["sub_label"] == "'WithTorchFunction'"
    stacks = fg.normalise(fg.read_collapsed(profile_2.collapsed))
    dispatched = sum(n for s, n in stacks.items()
                     if f"{ADD_FRAME};torch::handle_torch_function (libtorch_python.so)" in s)
    in_python = sum(n for s, n in stacks.items()
                    if "WithTorchFunction.__torch_function__ (benchmarks/torch_function.py)" in s)
    assert dispatched > 0.5 * sum(stacks.values()) and in_python > 0


def test_existing_profiles_are_skipped_unless_rerun(own_suite_profiles):
    out, _, commit = own_suite_profiles
    report = profile.profile_cases(Path(sys.executable), ROOT / "benchmarks", harness_env(), commit, out,
                                   pyspy="py-spy-is-not-run-when-nothing-is-to-record",
                                   only=lambda c: c.params["sub_label"] in ("'Tensor'", "'WithTorchFunction'"))
    assert (report.recorded, report.existing, report.failures) == (0, 2, [])


FAILING_SUITE = '''\
import torch
from torchbench_core.asv_suite import TimerSpec, TimerSuite


class Mixed(TimerSuite):
    timers = [TimerSpec("torch.mul(x, x)", setup="x = torch.ones(1)", label="__torch_function__ mixed",
                        sub_label="fine", description="mul"),
              TimerSpec("torch.mul(x, x)", setup="raise RuntimeError('setup exploded')",
                        label="__torch_function__ mixed", sub_label="broken", description="mul")]


X = torch.ones(1)


def time_mul():
    torch.mul(X, X)
'''


def test_a_failing_case_is_named_and_the_others_are_recorded(tmp_path, capsys):
    pyspy = shutil.which("py-spy")
    if pyspy is None:
        pytest.fail("py-spy is not installed: scripts/install.sh installs it")
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "__init__.py").write_text("")
    (suite / "bench_mixed.py").write_text(FAILING_SUITE)
    commit = commits.Commit("a" * 40, "mixed")
    report = profile.profile_cases(Path(sys.executable), suite, harness_env(), commit, tmp_path / "out", pyspy=pyspy,
                                   patterns=["Mixed", "time_mul"], seconds=0.5)
    assert report.recorded == 2 and len(report.failures) == 1
    assert report.failures[0].startswith("aaaaaaaa bench_mixed.Mixed.track_time [1] (__torch_function__ mixed, "
                                         "broken, mul, 1): the benchmark failed: RuntimeError: setup exploded")
    assert "setup exploded" in capsys.readouterr().err
    assert sorted(fg.available(tmp_path / "out")) == [(commit.sha, "bench_mixed.Mixed.track_time", 0),
                                                      (commit.sha, "bench_mixed.time_mul", 0)]
    # a plain time_ function is called in a loop: its frame, then torch.mul's entry point
    where = fg.location(tmp_path / "out", commit.sha, "bench_mixed.time_mul", 0)
    plain = fg.normalise(fg.read_collapsed(where.collapsed))
    frame = "_call_many (torchbench_core/asv_worker.py);time_mul (suite/bench_mixed.py);"
    under_call = sum(n for s, n in plain.items() if frame in s)
    under_mul = sum(n for s, n in plain.items() if frame + "torch::autograd::THPVariable_mul (libtorch_python.so)" in s)
    # (the shares are the machine's: the result's deallocation, also under time_mul's frame, took 34 of 144
    # samples on one machine, and torch.mul itself 63; the loop's own frame, outside time_mul, took 25 of 105 in
    # a CI run beside another test worker. Broken, the frame is missing and both shares are 0.)
    assert under_call > 0.6 * sum(plain.values()) and under_mul > 0.25 * under_call, plain


def _venv_without_py_spy(tmp_path: Path) -> tuple[Path, dict]:
    """A venv that sees this Python's packages (torchbench included) but has no py-spy in its bin folder, and
    an environment whose PATH has none either."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    # the packages this Python sees: its own site folders (where the tests run in a venv, that venv's; a
    # venv made from a venv is based on the system's interpreter, whose --system-site-packages lack them)
    (site_packages,) = (tmp_path / "venv" / "lib").glob("python3.*/site-packages")
    outer = [p for p in [*site.getsitepackages(), site.getusersitepackages()] if Path(p).is_dir()]
    (site_packages / "outer.pth").write_text("".join(f"import site; site.addsitedir({p!r})\n" for p in outer))
    path = os.pathsep.join(d for d in os.environ["PATH"].split(os.pathsep)
                           if d and not (Path(d) / "py-spy").exists() and Path(d).resolve() != Path(sys.executable).resolve().parent)
    return tmp_path / "venv" / "bin", dict(os.environ, PATH=path)


def test_without_py_spy_the_command_says_so_and_exits_2(tmp_path):
    bin_dir, env = _venv_without_py_spy(tmp_path)
    proc = subprocess.run([str(bin_dir / "python"), "-m", "torchbench", "profile", "--out", str(tmp_path / "out")],
                          cwd=ROOT, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "py-spy is not installed (no `py-spy` beside this Python or on PATH)" in proc.stderr
    assert "pip install py-spy" in proc.stderr and "Traceback" not in proc.stderr


def test_py_spy_installed_beside_the_interpreter_is_found_without_activating_the_venv(tmp_path):
    """`/path/venv/bin/torchbench ...` with py-spy installed in that venv and the venv not on PATH."""
    pyspy = shutil.which("py-spy")
    assert pyspy, "the test environment has py-spy (pyproject's dependencies)"
    bin_dir, env = _venv_without_py_spy(tmp_path)
    (bin_dir / "py-spy").symlink_to(pyspy)  # what `pip install py-spy` into that venv puts there
    proc = subprocess.run([str(bin_dir / "python"), "-c", "from torchbench import tools; print(tools.find('py-spy'))"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.stdout.strip() == str(bin_dir / "py-spy"), proc.stderr


# -- the command, end to end on the example library ---------------------------------------------------

def run_profile(*argv) -> int:
    """`torchbench profile ARGV...` in this process (its output captured by pytest)."""
    # from inside this checkout (a git repository, hence the project) the example is asked for by name
    return torchbench.cli.main(["profile", *([] if "--repo" in argv else ["--example"]), *map(str, argv)])


@pytest.fixture(scope="module")
def example_profiles(tmp_path_factory, env_dir):
    """`torchbench profile` over the example's README commit and the commit that makes TensorLike slow."""
    out = tmp_path_factory.mktemp("profile-e2e")
    repo = example.materialize(out / "example" / "tensorlib")  # the default subject
    shas = [c.hexsha for c in reversed(list(git.Repo(repo).iter_commits("HEAD")))]
    status = run_profile("HEAD~5..HEAD~3", "--out", out, "--env-dir", env_dir)
    return out, shas[1], shas[2], status


@pytest.mark.slow
def test_profile_records_every_dispatch_case_of_two_commits(example_profiles, env_dir, capsys):
    out, base, head, status = example_profiles
    assert status == 0
    found = fg.available(out)
    assert {(sha, index) for sha, _, index in found} == {(sha, i) for sha in (base, head) for i in range(6)}
    assert {name for _, name, _ in found} == {"bench_dispatch.Dispatch.track_time"}
    assert all(p.metadata()["samples"] >= 100 for p in found.values())
    # a second run finds them all, records nothing and says so
    assert run_profile("HEAD~5..HEAD~3", "--out", out, "--env-dir", env_dir) == 0
    report = capsys.readouterr().out.split("== profiles in")[-1]
    rows = [line.split() for line in report.splitlines() if line.strip()[:8] in (base[:8], head[:8])]
    assert [row[1:5] for row in rows] == [["0", "6", "0", "0"], ["0", "6", "0", "0"]], report


@pytest.mark.slow
def test_the_slower_commits_new_frames_are_in_its_differential_graph(example_profiles, tmp_path, chromium):
    out, base, head, status = example_profiles
    found = fg.available(out)
    index = next(i for (sha, _, i), p in found.items()
                 if sha == head and p.metadata()["params"]["sub_label"] == "'TensorLike'"
                 and "add" in p.metadata()["params"]["description"])
    name = "bench_dispatch.Dispatch.track_time"
    before, after = found[(base, name, index)], found[(head, name, index)]
    tree = fg.differential_tree(fg.normalise(fg.read_collapsed(before.collapsed)),
                                fg.normalise(fg.read_collapsed(after.collapsed)))
    pytree = [n for n in nodes(tree) if "torch/utils/_pytree.py" in n["name"]]
    assert pytree and all(n["delta"] == n["value"] for n in pytree)  # the walk commit 3 added: new frames
    html_dir = tmp_path / "html"
    rel = vendored(html_dir)
    page = html_dir / "profiles" / "tensorlike-add.html"
    fg.write_differential_page(before, after, page, f"../{rel}", "TensorLike torch.add: README -> pytree")
    dom = dump_dom(chromium, page, tmp_path / "chrome")
    drawn = re.findall(r'<g[^>]*name="([^"]*_pytree\.py[^"]*)"[^>]*><rect[^>]*fill="(rgb\([^)]*\))"', dom)
    assert drawn and {fill for _, fill in drawn} == {"rgb(255,190,90)"}  # orange: only in head


PYPROJECT = """\
[build-system]
requires = ["hatchling>=1.21"]
build-backend = "hatchling.build"

[project]
name = "addlib"
version = "0.1.0"
dependencies = ["torch"]

[tool.hatch.build.targets.wheel]
packages = ["addlib"]
"""
ADDLIB_SUITE = '''\
import addlib
import torch
from torchbench_core.asv_suite import TimerSpec, TimerSuite


class Add(TimerSuite):
    timers = [TimerSpec("addlib.add(a, a)", setup="a = torch.ones(1)", globals={"addlib": addlib},
                        label="__torch_function__ addlib", sub_label="Tensor", description="add")]
'''


@pytest.mark.slow
def test_a_commit_that_does_not_build_is_named_and_the_others_are_profiled(tmp_path, env_dir, capsys):
    path = tmp_path / "addlib"
    (path / "addlib").mkdir(parents=True)
    (path / "benchmarks").mkdir()
    (path / "benchmarks" / "__init__.py").write_text("")
    (path / "benchmarks" / "bench_add.py").write_text(ADDLIB_SUITE)
    (path / "addlib" / "__init__.py").write_text("import torch\n\n\ndef add(a, b):\n    return torch.add(a, b)\n")
    repo = git.Repo.init(path, initial_branch="main")
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "t").set_value("user", "email", "t@example.com")
    (path / "pyproject.toml").write_text(PYPROJECT.replace('version = "0.1.0"', 'version = "not a version"'))
    repo.index.add(["pyproject.toml", "addlib/__init__.py", "benchmarks/__init__.py", "benchmarks/bench_add.py"])
    broken = repo.index.commit("a version hatchling refuses").hexsha
    (path / "pyproject.toml").write_text(PYPROJECT)
    repo.index.add(["pyproject.toml"])
    fixed = repo.index.commit("a valid version").hexsha
    out = tmp_path / "out"
    assert run_profile("--repo", path, "--last", 2, "--out", out, "--env-dir", env_dir, "--seconds", 0.5) == 2
    captured = capsys.readouterr()
    assert f"torchbench profile: {broken[:8]} does not build: pip wheel failed" in captured.err
    assert list(fg.available(out)) == [(fixed, "bench_add.Add.track_time", 0)]
    stacks = fg.read_collapsed(fg.location(out, fixed, "bench_add.Add.track_time", 0).collapsed)
    assert any(f"add (addlib/__init__.py:5);{ADD_FRAME}" in s for s in stacks)
    report = captured.out.split("== profiles in")[-1]
    assert f"problems:\n  - {broken[:8]} does not build" in report
