"""The command's exit-status policy and its input checks, and the layout's import rule (fast).

Exit statuses (torchbench/errors.py): 0 done, 1 a regression (alert only), 2 a failure, 3 inconclusive
(find --good/--bad). Nothing but a regression may exit 1: a workflow fails a pull request on it.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import torchbench.cli
from torchbench import errors, tools
from torchbench.ab.options import Policy, Rounds
from torchbench.asv_bridge import worker
from torchbench.asv_bridge.driver import harness_env
from torchbench.errors import EXIT_FAILURE, UserError
from torchbench.history.run import HistoryOptions
from torchbench.profiling.record import ProfileOptions
from torchbench.project.commits import Selection

ROOT = Path(__file__).resolve().parents[1]


def run_main(capsys, *argv) -> tuple[int, str]:
    """torchbench.cli.main in this process: (exit status, stderr). argparse's own refusals exit too."""
    try:
        status = torchbench.cli.main([str(a) for a in argv])
    except SystemExit as e:
        status = e.code
    return status, capsys.readouterr().err


# -- every numeric flag is checked -----------------------------------------------------------------------

@pytest.mark.parametrize("argv, message", [
    (["alert", "--fdr", "1.5"], "argument --fdr: must be between 0 and 1 (exclusive), not 1.5"),
    (["alert", "--fdr", "0"], "argument --fdr: must be between 0 and 1 (exclusive), not 0.0"),
    (["alert", "--fdr", "nan"], "argument --fdr: must be between 0 and 1 (exclusive), not nan"),
    (["find", "--floor", "-0.1"], "argument --floor: must be a number >= 0, not -0.1"),
    (["alert", "--threshold", "-1"], "argument --threshold: must be a number >= 0, not -1.0"),
    (["alert", "--budget-minutes", "0"], "argument --budget-minutes: must be a number > 0, not 0.0"),
    (["find", "--min-rounds", "0"], "argument --min-rounds: must be a whole number >= 1, not 0"),
    (["alert", "--max-rounds", "1"], "argument --max-rounds: must be a whole number >= 2"),
    (["alert", "--max-rounds", "x"], "argument --max-rounds: invalid int value: 'x'"),
    (["run", "--rounds", "0"], "argument --rounds: must be a whole number >= 1, not 0"),
    (["run", "--last", "0"], "argument --last: must be a whole number >= 1, not 0"),
    (["profile", "--seconds", "0"], "argument --seconds: must be a number > 0, not 0.0"),
    (["profile", "--rate", "-5"], "argument --rate: must be a whole number >= 1, not -5"),
    (["alert", "--base", "a", "--head", "b", "--min-rounds", "9", "--max-rounds", "8"],
     "min-rounds (9) must be <= max-rounds (8)"),
])
def test_a_bad_flag_is_named_and_exits_2(capsys, argv, message):
    status, err = run_main(capsys, *argv)
    assert status == EXIT_FAILURE and message in err and "Traceback" not in err, err


def test_the_options_refuse_the_same_values_from_the_python_api():
    for make, message in [(lambda: Policy(fdr=1.5), "fdr must be between 0 and 1 (exclusive), not 1.5"),
                          (lambda: Policy(floor=-1), "floor must be a number >= 0"),
                          (lambda: Rounds(max_rounds=1), "max_rounds must be a whole number >= 2"),
                          (lambda: Rounds(min_rounds=10, max_rounds=5), "min_rounds (10) must be <= max_rounds (5)"),
                          (lambda: Rounds(budget_minutes=-1), "budget_minutes must be a number > 0"),
                          (lambda: HistoryOptions(rounds=0), "rounds must be a whole number >= 1"),
                          (lambda: ProfileOptions(rate=0), "rate must be a whole number >= 1"),
                          (lambda: Selection(last=0), "last must be a whole number >= 1"),
                          (lambda: Selection(range="a..b", last=2), "give one of RANGE, --last and --hashfile")]:
        with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)")):
            make()
    assert Rounds(min_rounds=2, max_rounds=2) and Policy(fdr=0.5, floor=0, threshold=0)


# -- exit statuses ---------------------------------------------------------------------------------------

def test_exit_statuses_live_in_one_place_and_only_a_regression_is_1():
    assert (errors.EXIT_OK, errors.EXIT_REGRESSION, errors.EXIT_FAILURE, errors.EXIT_INCONCLUSIVE) == (0, 1, 2, 3)
    help_text = torchbench.cli.build_parser().format_help()
    assert "find: Exit status: 0 done (bisect: the culprit found); 3 bisect inconclusive" in " ".join(help_text.split())
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "1 a regression (`alert` only)" in readme and "3 inconclusive (`find`'s bisection)" in readme


def test_an_unexpected_exception_exits_2_with_one_line_and_the_traceback_in_a_file(capsys, monkeypatch, tmp_path):
    """A bug must not exit 1 (Python's status for an uncaught exception), which means "regression"."""
    def broken(args):
        raise KeyError("no such cell")

    monkeypatch.setattr(torchbench.cli.run, "publish_main", broken)
    status, err = run_main(capsys, "publish", "--out", tmp_path / "out")
    assert status == EXIT_FAILURE
    (line,) = err.strip().splitlines()
    assert line.startswith("torchbench publish: unexpected error: KeyError: 'no such cell' (traceback in ")
    (saved,) = (tmp_path / "out" / "crashes").iterdir()
    assert str(saved) in line and "Traceback" in saved.read_text() and "no such cell" in saved.read_text()


def test_a_failing_asv_step_exits_2_and_its_last_line_names_the_step(tmp_path):
    """asv itself crashing (a malformed configuration) is a failure of that step, never a regression."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "asv.conf.json").write_text("{not json")
    proc = subprocess.run([sys.executable, "-m", "torchbench", "publish", "--out", str(out)], capture_output=True,
                          text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == EXIT_FAILURE, proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("torchbench: error: publish failed (exit status 1)")


# -- what a worker writes --------------------------------------------------------------------------------

def test_a_listing_that_is_not_json_is_named_with_its_first_bad_line():
    with pytest.raises(UserError, match=r"the listing: not valid JSON \(Expecting value\) at line 2: 'hello from a suite'"):
        worker.read_json('[\nhello from a suite\n]', "the listing")
    records, bad = worker.read_json_lines('{"a": 1}\nnot json\n{"b": 2}\n{"c": 3', "the worker's output")
    assert records == [{"a": 1}, {"b": 2}]  # the unfinished last line is dropped, not an error
    assert bad == "the worker's output: line 2 is not valid JSON: 'not json'"


def test_a_suite_that_prints_on_import_still_lists(tmp_path):
    suite = tmp_path / "benchmarks"
    suite.mkdir()
    (suite / "__init__.py").write_text("")
    (suite / "bench_noisy.py").write_text(textwrap.dedent('''
        import os
        print("hello from a suite")
        os.write(1, b"and from C\\n")

        def track_one():
            return 1.0
    '''))
    listing = worker.list_benchmarks(Path(sys.executable), suite, harness_env())
    assert [b["name"] for b in listing] == ["bench_noisy.track_one"]


def test_tools_beside_the_interpreter_come_first(tmp_path, monkeypatch):
    fake_bin = tmp_path / "venv" / "bin"
    fake_bin.mkdir(parents=True)
    (fake_bin / "valgrind").write_text("#!/bin/sh\n")
    (fake_bin / "valgrind").chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(fake_bin / "python"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert tools.find("valgrind") == str(fake_bin / "valgrind")
    assert tools.find("no-such-program-anywhere") is None


# -- the layout: imports point down ----------------------------------------------------------------------

LAYERS = ["errors", "validate", "stats", "paired", "resources", "tools", "project", "asv_bridge", "profiling", "ab", "history",
          "publish", "alert", "api", "cli", "console", "__main__"]


def _imports(path: Path) -> set[str]:
    """The torchbench subpackages and modules a module imports (relative imports resolved)."""
    package = path.relative_to(ROOT).with_suffix("").parts[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                parts = [*base, *(node.module.split(".") if node.module else [])]
                names = [[*parts, a.name] for a in node.names] if not node.module else [parts]
            else:
                names = [node.module.split(".")]
            found |= {n[1] for n in names if n[0] == "torchbench" and len(n) > 1}
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("torchbench.")}
    return found


def test_imports_point_down_the_flow_and_nothing_outside_alert_imports_it():
    for path in (ROOT / "torchbench").rglob("*.py"):
        rel = path.relative_to(ROOT / "torchbench")
        own = rel.parts[0].removesuffix(".py")
        if own == "__init__":
            continue
        for target in _imports(path):
            if target == own or target not in LAYERS:
                continue
            assert LAYERS.index(target) < LAYERS.index(own), f"{rel} imports torchbench.{target} (upwards)"
            if target == "alert":
                assert own in ("alert", "api", "cli"), f"{rel} imports the alert package"


def test_each_package_says_its_role():
    for init in (ROOT / "torchbench").glob("*/__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and len(doc) > 40, f"{init} has no docstring saying its role"


def test_the_budget_waits_for_a_reachable_bar_unless_min_rounds_is_given():
    import argparse

    from torchbench.ab.options import MIN_ROUNDS
    from torchbench.cli.options import add_measurement_arguments, rounds_of

    parser = argparse.ArgumentParser()
    add_measurement_arguments(parser, 9.0)
    default = rounds_of(parser.parse_args([]))
    assert default.min_rounds == MIN_ROUNDS and default.until_reachable
    trial = rounds_of(parser.parse_args(["--min-rounds", "2"]))
    assert trial.min_rounds == 2 and not trial.until_reachable
