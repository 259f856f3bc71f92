"""A user's asv.conf.json found and layered, the repository you stand in tracked, and the command line's friction
gone (issue 48 items 1, 2 and 5). Fast: real git repositories and asv's own reader, nothing built."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import git
import pytest

import torchbench
from e2e import ROOT, make_repo
from torchbench.errors import EXIT_INCONCLUSIVE, UserError
from torchbench.project import config, subject
from torchbench.project.user_config import PLACES, find_config, read_config


def _conf(path: Path, **values) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"version": 1, "project": "mylib", "repo": "..", "branches": ["main"], **values}
    path.write_text("// asv reads comments\n" + json.dumps(doc, indent=2) + "\n")
    return path


def test_the_configuration_is_found_where_asv_users_keep_it(tmp_path):
    assert find_config(tmp_path) is None
    for place in reversed(PLACES):  # each place, the earlier ones winning
        _conf(tmp_path / place, repo=".." if "/" in place else ".")
        assert find_config(tmp_path) == (tmp_path / place).resolve()
    other = _conf(tmp_path / "elsewhere" / "my.json")
    assert find_config(tmp_path, other) == other.resolve()
    with pytest.raises(UserError, match="--config nope.json: no such file"):
        find_config(tmp_path, Path("nope.json"))
    bad = tmp_path / "bad.json"
    bad.write_text('{"project": "x"}')  # asv wants a version and a repo
    with pytest.raises(UserError, match=f"{bad}: not a usable asv configuration"):
        read_config(bad)


def test_the_users_configuration_is_layered_under_torchbenchs(tmp_path):
    repo = tmp_path / "lib"
    (repo / "asv_bench" / "bench").mkdir(parents=True)
    path = _conf(repo / "asv_bench" / "asv.conf.json", benchmark_dir="bench", environment_type="conda",
                 build_command=["python -m build --wheel -o {build_cache_dir} {build_dir}"],
                 install_command=["in-dir={env_dir} python -m pip install {wheel_file}"],
                 show_commit_url="https://example.invalid/c/", launch_method="spawn", default_benchmark_timeout=99,
                 matrix={"req": {"torch": "2.1.0", "numpy": "", "sparse": "0.15"}, "env": {"OMP_NUM_THREADS": "1"}},
                 plugins=[".myplugin"], env_dir="/somewhere/else")
    user = read_config(path)
    assert user.repo_path() == repo.resolve()
    bench = config.benchmark_dir(repo, None, user=user)
    assert bench == repo.resolve() / "asv_bench" / "bench"  # relative to the file, not to the repository
    assert config.benchmark_dir(repo, tmp_path, user=user) == tmp_path.resolve()  # --benchmarks first
    notes: list[str] = []
    out = tmp_path / "out"
    conf = json.loads(config.derive(repo=repo, project=config.Project("mylib"), out=out, env_dir=out / "env",
                                    benchmark_dir=bench, user=user, notes=notes).read_text())
    for key in ("build_command", "install_command", "show_commit_url", "launch_method", "default_benchmark_timeout",
                "branches"):
        assert conf[key] == user.values[key], key
    base = config.base_config()["matrix"]["req"]
    assert conf["matrix"]["req"] == {**base, "numpy": "", "sparse": "0.15"}  # torch stays pinned
    assert conf["matrix"]["env"] == {"OMP_NUM_THREADS": "1"}
    assert conf["environment_type"] == "virtualenv"  # no conda on this machine
    assert conf["plugins"] == [config.PLUGIN, config.PUBLISHER, ".myplugin"]
    assert conf["env_dir"] == str(out / "env") and conf["results_dir"] == str(out / "results")
    text = "\n".join(notes)
    assert "environment_type 'conda'" in text and "virtualenvs" in text
    assert "its matrix asks torch 2.1.0: torchbench measures the pinned release" in text
    assert f"torchbench adds: torch {base['torch']} (pinned), its pins of scipy {base['scipy']}, setuptools " in text
    with_torch = json.loads(config.derive(repo=repo, project=config.Project("mylib"), out=out, env_dir=out / "env",
                                          benchmark_dir=bench, user=user, torch=("2.12.0",)).read_text())
    assert with_torch["matrix"]["req"]["torch"] == "2.12.0"


# pip resolves each package beside the pinned torch (about a minute): with -m validation, so that the default run
# stays under CI's 30 minutes; tests/test_user_project.py's newcomer test runs a conda conf end to end in CI
@pytest.mark.validation
def test_a_conda_configuration_runs_in_virtualenvs_with_pips_names_and_the_users_pins(tmp_path):
    """Issue 62 part 1-3: a conf written for conda (conda's names, no `branches`) on a machine without conda.
    Real pip answers (the package index, no install): conda's names become pip's, conda's CUDA selector is left
    out with its line, a package pip cannot install is left out with pip's reason, the user's scipy pin wins over
    torchbench's, and the repository's default branch (trunk) is followed, not asv's "master"."""
    repo = tmp_path / "lib"
    make_repo(repo, [("a library", {"lib.py": "X = 1\n"})])
    git.Repo(repo).git.branch("-M", "trunk")
    (repo / "benchmarks").mkdir()
    path = repo / "benchmarks" / "my-asv.json"  # any file name, as `asv --config` takes
    path.write_text(json.dumps({"version": 1, "project": "lib", "repo": "..", "environment_type": "conda",
                                "matrix": {"pytorch": "2.13.0", "pytorch-cuda": "12.1", "pytorch-scatter": "",
                                           "scipy": "1.9.3", "torchbench-no-such-package": ""}}))
    user = read_config(path)
    notes: list[str] = []
    out, env_dir = tmp_path / "out", tmp_path / "env"
    conf = json.loads(config.derive(repo=repo, project=config.Project("lib"), out=out, env_dir=env_dir,
                                    benchmark_dir=repo / "benchmarks", user=user, notes=notes).read_text())
    base = config.base_config()["matrix"]["req"]
    # the user's scipy of 2022 needs a numpy older than torchbench's pin: the user's wins, pip chooses numpy
    assert conf["matrix"]["req"] == {**{k: v for k, v in base.items() if k != "numpy"}, "scipy": "1.9.3"}, \
        conf["matrix"]
    assert conf["environment_type"] == "virtualenv" and conf["branches"] == ["trunk"]
    # the rows that import a package left out are skipped here, with why (torchbench_core.skips)
    assert conf[config.LEFT_OUT_KEY] == {"torch_scatter": "torch-scatter",
                                         "torchbench_no_such_package": "torchbench-no-such-package"}
    text = "\n".join(notes)
    assert "pytorch -> torch" in text and "pytorch-scatter -> torch-scatter" in text
    assert "left out: pytorch-cuda (conda's CUDA selector" in text
    assert "its matrix asks torch" not in text  # the pinned release is the one it asks
    assert "matrix package torch-scatter cannot be installed here, so it is left out (the rows that import" in text
    assert "matrix package torchbench-no-such-package cannot be installed here" in text
    assert "No matching distribution found for torchbench-no-such-package" in text
    assert "torchbench's pin of numpy is left out, the user's matrix wins" in text and "scipy==1.9.3" in text
    assert "the repository's default branch, trunk, is followed" in text
    assert f"its pins of setuptools {base['setuptools']}, wheel" in text
    assert "scipy" not in text.split("its pins of")[1] and "numpy" not in text.split("its pins of")[1]
    answers = json.loads((env_dir / "installable.json").read_text())  # pip is asked once, the answers kept
    assert answers["torch==2.13.0 scipy==1.9.3"] is None and answers["torch==2.13.0 torch-scatter"], answers


def test_condas_names_are_one_table():
    from torchbench.project import conda_names

    names = conda_names.load()
    req, lines = conda_names.to_pip({"PyTorch": "", "cudatoolkit": "11.8", "pyg": "2.5", "numpy": "1.26"})
    assert req == {"torch": "", "torch-geometric": "2.5", "numpy": "1.26"} and len(lines) == 1
    assert conda_names.to_pip({"numpy": ""}) == ({"numpy": ""}, [])
    assert not set(names.rename) & set(names.drop)


def test_the_project_is_read_in_repo_subdir(tmp_path):
    repo = tmp_path / "lib"
    (sha,) = make_repo(repo, [("one", {"python/pyproject.toml": '[project]\nname = "sub-lib"\n'})])
    assert config.read_project(git.Repo(repo), sha, "lib", "python").name == "sub-lib"
    assert config.read_project(git.Repo(repo), sha, "lib").name == "lib"  # no pyproject.toml at the root


def test_the_repository_you_stand_in_is_the_project(tmp_path):
    repo = tmp_path / "lib"
    make_repo(repo, [("one", {"f": "1"})])
    (repo / "deep").mkdir()
    here = subject.choose(cwd=repo / "deep")
    assert here.repo == repo.resolve() and "the git repository you are in" in here.line
    assert subject.choose(example=True, cwd=repo).repo is None
    outside = tmp_path / "outside"
    outside.mkdir()
    assert subject.choose(cwd=outside).repo is None  # (tmp_path is inside no repository)
    assert "not inside a git repository" in subject.choose(cwd=outside).line
    conf = _conf(repo / "benchmarks" / "asv.conf.json")
    assert subject.choose(config=conf, cwd=outside).repo == repo.resolve()  # the repo --config names
    with pytest.raises(UserError, match="--example"):
        subject.choose(repo, example=True)


def cli(*args, cwd: Path, monkeypatch, capsys) -> tuple[int, str, str]:
    """`torchbench ARGS` in CWD, in this process: (exit status, stdout, stderr)."""
    from torchbench.cli import main

    monkeypatch.chdir(cwd)
    try:
        status = main(list(map(str, args)))
    except SystemExit as e:  # argparse: --help, --version, a refused flag
        status = e.code
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_an_empty_repository_and_a_bad_regex_are_refused_at_once_and_leave_nothing(tmp_path, monkeypatch, capsys):
    repo = tmp_path / "empty"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    out = tmp_path / "out"
    status, _, err = cli("run", "--out", out, cwd=repo, monkeypatch=monkeypatch, capsys=capsys)
    assert status == 2 and err.strip().splitlines() == [f"torchbench: error: {repo}: the repository has no commits "
                                                        "yet; commit the project and its benchmarks first"], err
    assert not out.exists()  # no lock, no environment folder left
    out.mkdir()  # an output folder that was there stays, without our lock
    assert cli("find", "--out", out, cwd=repo, monkeypatch=monkeypatch, capsys=capsys)[0] == 2
    assert list(out.iterdir()) == []
    for args in (["run", "-b", "x("], ["alert", "HEAD~1..HEAD", "-b", "[a"], ["profile", "-b", "(?"],
                 ["find", "*x"]):
        status, _, err = cli(*args, "--out", tmp_path / "o2", cwd=repo, monkeypatch=monkeypatch, capsys=capsys)
        assert status == 2 and "is not a regular expression" in err, (args, err)
    assert not (tmp_path / "o2").exists()


def test_version_and_an_example_in_every_help(tmp_path, monkeypatch, capsys):
    status, out, _ = cli("--version", cwd=tmp_path, monkeypatch=monkeypatch, capsys=capsys)
    assert status == 0 and out.strip() == f"torchbench {torchbench.__version__} (distribution torchbench-tracker)"
    for command in ("", "run", "publish", "profile", "find", "alert", "merge"):
        status, out, _ = cli(*filter(None, [command]), "--help", cwd=tmp_path, monkeypatch=monkeypatch, capsys=capsys)
        assert status == 0 and "examples:\n  torchbench " in out, command


def test_a_closed_pipe_ends_quietly_with_the_verdicts_exit_status(tmp_path):
    from test_alert_outcomes import BASE, HEAD, _result_folders

    pool = json.loads((ROOT / "tests" / "data" / "alert_pool_12_rounds.json").read_text())
    base, head = _result_folders(tmp_path, "c5", BASE.sha, pool), _result_folders(tmp_path, "c6", HEAD.sha, pool)
    proc = subprocess.Popen([sys.executable, "-m", "torchbench", "alert", "--base-results", *map(str, base),
                             "--head-results", *map(str, head), "--undecided-exit", "3"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    proc.stdout.close()  # `| head` gone before the report
    err = proc.stderr.read()
    assert proc.wait(timeout=300) == EXIT_INCONCLUSIVE, err  # the verdict's own status, never 1
    assert "BrokenPipeError" not in err and "Traceback" not in err
    assert "== undecided: exit status 3" in err


def test_compare_results_names_the_layout_it_expects(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(UserError, match="asv's results layout: result files RESULTS/MACHINE/COMMIT-ENV.json"):
        torchbench.compare_results([tmp_path], [tmp_path])
    assert "RESULTS/MACHINE/COMMIT-ENV.json" in torchbench.compare_results.__doc__
    for name in ("find_steps", "profile_cases", "merge_results"):  # every command has a Python function
        assert callable(getattr(torchbench, name)) and name in torchbench.__all__


def test_find_and_merge_from_python(tmp_path):
    from test_alert_outcomes import BASE, _result_folders

    repo = tmp_path / "lib"
    make_repo(repo, [("one", {"f": "1"}), ("two", {"f": "2"})])
    pool = json.loads((ROOT / "tests" / "data" / "alert_pool_12_rounds.json").read_text())
    (machine,) = _result_folders(tmp_path / "m2", "c5", BASE.sha, {**pool, "rounds": pool["rounds"][:1]})
    merged = torchbench.merge_results([machine], out=tmp_path / "out", repo=repo)
    assert merged.added == {"vm": 1} and not merged.skipped
    assert (tmp_path / "out" / "asv.conf.json").is_file()
    found = torchbench.find_steps(repo, out=tmp_path / "out", confirm=False)  # the merged commit is not in repo
    assert isinstance(found, torchbench.StepsFound) and found.record == {}


def test_the_distribution_name_is_not_the_unrelated_pypi_project():
    import tomllib

    doc = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert doc["project"]["name"] == "torchbench-tracker"  # "torchbench" on PyPI is another project (2019)
    assert doc["project"]["scripts"] == {"torchbench": "torchbench.console:main"}


def test_a_flag_the_subcommand_does_not_know_prints_the_subcommands_usage(capsys):
    """Issue 62's noise: `torchbench run --bogus` printed the top-level usage."""
    from torchbench.cli import main

    with pytest.raises(SystemExit) as exited:
        main(["run", "--bogus"])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and err.startswith("usage: torchbench run ") and "--bogus" in err, err


def test_only_a_time_row_is_a_measurement():
    """Issue 62's noise: an instruction-count row's Measurement printed "Median: 399928.00 s"."""
    from torchbench.asv_bridge.results import COUNT_UNIT, Row

    def row(unit):
        return Row("m", "c" * 40, "env", "bench.time_x", 0, (), 399928.0, (399928.0,), 1, None, unit, None)

    assert row(COUNT_UNIT).measurement() is None and row("us").measurement() is None
    assert row("seconds").measurement().median == 399928.0


def test_a_steps_row_is_named_once():
    """Issue 62's noise: the Steps page named a plain row without parameters twice (its label and sub-label)."""
    from torchbench.publish.steps_page import row_title

    assert row_title("bench.Sparse.time_spmm", "bench.Sparse.time_spmm", None) == "bench.Sparse.time_spmm"
    assert row_title("dispatch", "TensorLike", "torch.add(a, b)") == "dispatch · TensorLike · torch.add(a, b)"


def test_a_row_that_imports_a_matrix_package_left_out_is_skipped_here(monkeypatch):
    """Issue 62 part 1: a matrix package that cannot be installed here is left out; the rows that import it
    are listed "skipped here" with why, as a row without its hardware is, not failed on every pull request."""
    from torchbench_core import skips

    error = "ModuleNotFoundError: No module named 'torch_scatter'"
    assert skips.skipped_here(error) == ""  # nothing left out: a failure
    monkeypatch.setenv(skips.LEFT_OUT_ENV, json.dumps({"torch_scatter": "torch-scatter"}))
    assert skips.skipped_here(error) == "skipped here: its matrix package torch-scatter cannot be installed here"
    assert skips.skipped_here("ModuleNotFoundError: No module named 'torch_sparse'") == ""  # not left out


def test_a_skipped_rows_traceback_is_told_in_one_line_and_any_other_is_shown_whole():
    """Issue 62's noise: each cuda row printed ~20 lines of traceback a commit before the report called it
    skipped. asv's console lines, as `asv run --show-stderr` prints them."""
    from torchbench.asv_bridge.driver import without_skip_tracebacks

    cuda = ["[75.00%] ···· For parameters: 64, 'cuda'\n", "              Traceback (most recent call last):\n",
            '                File "bench.py", line 12, in setup\n',
            "              AssertionError: Torch not compiled with CUDA enabled\n", "\n"]
    other = ["[100.00%] ···· Traceback (most recent call last):\n",
             "              NotImplementedError: no sparse kernel here\n"]
    out = list(without_skip_tracebacks(["[75.00%] ··· bench.Softmax.time_x   ok\n", *cuda, *other]))
    assert out == ["[75.00%] ··· bench.Softmax.time_x   ok\n", "[75.00%] ···· For parameters: 64, 'cuda'\n",
                   "[75.00%] ···· skipped here: no CUDA device (its traceback is in the outcome record)\n", "\n",
                   *other]
