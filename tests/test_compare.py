import itertools

import numpy as np
import pytest
import torch.utils.benchmark as torch_benchmark

import torchbench_core as tb
from torchbench_core.compare import BEST, VERY_BAD

from conftest import measurement_pair

RNG = np.random.RandomState(7)


def grid(envs=("main",), threads=(1, 4), spread=0.02, replicates=1, labels=("Batched dot",)):
    """Matching measurement lists for a tutorial-style table."""
    ours, theirs = [], []
    rows = ["[1, 1]", "[64, 1024]", "[10000, 64]"]
    for label, env, n, row, (desc, base), _ in itertools.product(
        labels, envs, threads, rows, [("mul/sum", 6e-6), ("bmm", 1.4e-4)], range(replicates)
    ):
        times = list(base * (1 + rows.index(row)) / n * RNG.lognormal(0, spread, size=12))
        a, b = measurement_pair(times, label=label, sub_label=row, description=desc,
                                env=env, num_threads=n, stmt="batched_dot(x, x)")
        ours.append(a)
        theirs.append(b)
    return ours, theirs


def render(ms, lib, trim=False, color=None, warnings=False):
    c = lib.Compare(ms)
    if trim:
        c.trim_significant_figures()
    if color is not None:
        c.colorize(rowwise=color == "rowwise")
    if warnings:
        c.highlight_warnings()
    return str(c)


CASES = {
    "one env": dict(),
    "two envs": dict(envs=("main", "branch")),
    "three envs one thread": dict(envs=("b", "a", "c"), threads=(1,)),
    "replicates merged": dict(replicates=3),
    "two labels": dict(labels=("first", "second")),
    "noisy": dict(spread=0.4),
}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("trim", [False, True])
@pytest.mark.parametrize("color", [None, "columnwise", "rowwise"])
@pytest.mark.parametrize("warnings", [False, True])
def test_layout_matches_torch(case, trim, color, warnings):
    ours, theirs = grid(**CASES[case])
    assert render(ours, tb, trim, color, warnings) == render(theirs, torch_benchmark, trim, color, warnings)


def test_missing_cells_match_torch():
    ours, theirs = grid()
    keep = [i for i in range(len(ours)) if i % 5 != 2]
    assert render([ours[i] for i in keep], tb, trim=True) == render([theirs[i] for i in keep], torch_benchmark, trim=True)


def test_tutorial_layout_details():
    ours, _ = grid(envs=("environment A: mul/sum", "environment B: bmm"), threads=(1,))
    text = render(ours, tb)
    lines = text.splitlines()
    assert lines[0].startswith("[") and " Batched dot " in lines[0] and lines[0].endswith("]")
    assert lines[2].startswith("1 threads: ---")
    assert lines[3].startswith("  (environment A: mul/sum)  [1, 1]")
    assert lines[4].startswith("                            [64, 1024]")
    assert text.endswith("Times are in microseconds (us).\n")


def test_colours_mark_the_best_and_the_very_bad():
    ours, _ = grid(threads=(1,))
    text = render(ours, tb, color="rowwise")  # bmm is ~23x mul/sum in every row
    rows = text.splitlines()[3:6]
    assert all(BEST in r.split("|")[1] and VERY_BAD in r.split("|")[2] for r in rows)


def test_env_none_mixes_with_named_envs():
    """torch 2.13 raises TypeError here (Measurement.env reads a misspelt
    attribute and falls back to None, which cannot be sorted against str)."""
    ours, theirs = measurement_pair([1e-6, 1.1e-6], label="L", description="d")
    ours_named, theirs_named = measurement_pair([2e-6, 2.1e-6], label="L", description="d", env="branch")
    with pytest.raises(TypeError):
        str(torch_benchmark.Compare([theirs_named, theirs]))
    lines = str(tb.Compare([ours_named, ours])).splitlines()
    assert lines[3].startswith("  (Unspecified env)  f(x)")  # unnamed env sorts first
    assert lines[4].startswith("  (branch)           f(x)")


def test_all_descriptions_none_renders_one_unnamed_column():
    """torch 2.13 raises TypeError (len(None)) when no measurement has a description."""
    ours, theirs = measurement_pair([1e-6, 1.2e-6], label="L")
    with pytest.raises(TypeError):
        str(torch_benchmark.Compare([theirs]))
    lines = str(tb.Compare([ours])).splitlines()
    assert lines[1].strip() == "|" and "1.1" in lines[3]


def test_sub_nanosecond_cells_use_picoseconds():
    ours, theirs = measurement_pair([3e-10, 3.1e-10], label="L", description="d")
    assert "Times are in seconds (s)." in str(torch_benchmark.Compare([theirs]))
    text = str(tb.Compare([ours]))
    assert "Times are in picoseconds (ps)." in text and "305.0" in text


def test_relative_view_divides_by_the_baseline_env():
    rows = []
    for env, scale in (("main", 1.0), ("branch", 1.5)):
        for desc, base in (("small", 1e-6), ("large", 1e-3)):
            rows.append(tb.Measurement(1, [base * scale] * 5, tb.TaskSpec(
                "f(x)", "pass", label="L", sub_label="op", description=desc, env=env)))
    rows.append(tb.Measurement(1, [5e-6] * 5, tb.TaskSpec(
        "g(x)", "pass", label="L", sub_label="only-in-branch", description="small", env="branch")))
    c = tb.Compare(rows)
    c.relative_to("main")
    lines = str(c).splitlines()
    branch = next(l for l in lines if l.startswith("  (branch)"))
    main = next(l for l in lines if l.startswith("  (main)"))
    assert [s.strip() for s in branch.split("|")[1:]] == ["1.50", "1.50"]
    assert [s.strip() for s in main.split("|")[1:]] == ["1.00", "1.00"]
    orphan = next(l for l in lines if "only-in-branch" in l)
    assert [s.strip() for s in orphan.split("|")[1:]] == ["", ""]  # no baseline: blank
    assert "ratios of medians to the baseline env" in lines[-1]


def test_relative_view_rejects_an_unknown_baseline():
    m = tb.Measurement(1, [1.0], tb.TaskSpec("f", "pass", env="main"))
    with pytest.raises(ValueError, match=r"'nightly' is not among.*\['main'\]"):
        tb.Compare([m]).relative_to("nightly")


def test_only_measurements_are_accepted():
    with pytest.raises(ValueError, match="Expected an instance of `Measurement`"):
        tb.Compare([1.0])


def test_print_writes_the_table(capsys):
    ours, _ = grid(threads=(1,))
    c = tb.Compare(ours)
    c.print()
    assert capsys.readouterr().out == str(c) + "\n"
