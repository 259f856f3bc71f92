"""A Timer-in-`track_` asv suite, written as a graph library's maintainers write theirs (issues 61 and 63).

Real torch libraries time their ops in `track_` methods with torch.utils.benchmark's Timer, the function under
test passed as an asv parameter and held in the Timer's globals (a graph library's benchmark/asv suite:
`params = [[softmax, dense_softmax], ...]`, `benchmark_torch_function_in_milliseconds(f, **self.inputs)`). Such
a suite's rows are counted as their Timer's statement, where they live (torchbench_core.asv_worker.AsvTimed):
a function passed as a parameter, a lambda or a closure does not pickle.

`graphlib` has the small segment ops of a graph library (a softmax over each node's edges, scatter-sum,
degree, a GCN normalisation) at the sizes of its unit graphs, and the suite 42 rows:

    Aggregate.track_fwd   3 functions x 3 graph sizes x 2 channel counts   18
    Aggregate.track_bwd   2 softmaxes x 3 sizes x 2 channel counts          12
    Structure.track_fwd   2 functions x 3 sizes                              6
    Activation.track_fwd  torch.relu, torch.sigmoid, a lambda x 2 sizes      6

`make_repo` gives the library's repository: its base commit, a commit that rewords a docstring (A/A) and one
that slows `segment_softmax` by a little compute (a `+5%` of counts on its 12 rows' forward and backward).
"""

from __future__ import annotations

from pathlib import Path

import git

PYPROJECT = """\
[build-system]
requires = ["flit_core>=3.4,<4"]
build-backend = "flit_core.buildapi"

[project]
name = "graphlib"
version = "0.1"
description = "a throwaway graph library with a Timer-in-track_ asv suite"
dependencies = ["torch"]
"""

LIBRARY = '''"""graphlib: the segment ops of a graph library, at the sizes of its unit graphs."""

import torch


def segment_softmax(src, index, num_nodes):
    """The softmax of each node's incoming edges' values."""
    src = src{extra}
    rows = index.unsqueeze(1).expand_as(src)
    src_max = torch.full((num_nodes, src.size(1)), float("-inf")).scatter_reduce(0, rows, src, "amax")
    out = (src - src_max[index]).exp()
    denom = torch.zeros(num_nodes, src.size(1)).index_add(0, index, out)
    return out / denom[index]


def dense_softmax(src, index, num_nodes):
    return src.softmax(dim=-1)


def scatter_sum(src, index, num_nodes):
    return torch.zeros(num_nodes, src.size(1)).index_add(0, index, src)


def degree(index, num_nodes):
    return torch.bincount(index, minlength=num_nodes)


def gcn_norm(index, num_nodes):
    return degree(index, num_nodes).clamp(min=1).float().pow(-0.5)[index]
'''
# the slower commit: a little more compute on every call of segment_softmax (about +5% of its counts)
EXTRA = " * torch.ones(()) + 0.0"

SUITE = '''"""graphlib's asv suite: the function under test an asv parameter, timed by torch's Timer."""

import torch
from torch.utils.benchmark import Timer

import graphlib
from graphlib import dense_softmax, scatter_sum, segment_softmax

SIZES = [(16, 64), (64, 256), (256, 1024)]


def benchmark_torch_function_in_microseconds(f, *args, **kwargs):
    t0 = Timer(stmt="f(*args, **kwargs)", globals={"args": args, "kwargs": kwargs, "f": f})
    return t0.blocked_autorange(min_run_time=0.05).median * 1e6


def graph(num_nodes, num_edges, channels, requires_grad=False):
    g = torch.Generator().manual_seed(0)
    return {"src": torch.randn(num_edges, channels, generator=g, requires_grad=requires_grad),
            "index": torch.randint(num_nodes, (num_edges,), generator=g), "num_nodes": num_nodes}


class Aggregate:
    param_names = ["f", "num_nodes, num_edges", "channels"]
    params = [[segment_softmax, scatter_sum, dense_softmax], SIZES, [4, 16]]
    unit = "us"

    def setup(self, f, sizes, channels):
        self.inputs = graph(*sizes, channels, requires_grad=f is not scatter_sum)

    def track_fwd(self, f, sizes, channels):
        return benchmark_torch_function_in_microseconds(f, **self.inputs)

    def track_bwd(self, f, sizes, channels):
        if f is scatter_sum:
            raise NotImplementedError("no backward benchmark for scatter_sum")
        out = f(**self.inputs)
        return benchmark_torch_function_in_microseconds(out.backward, torch.ones_like(out), retain_graph=True)


class Structure:
    param_names = ["f", "num_nodes, num_edges"]
    params = [[graphlib.degree, graphlib.gcn_norm], SIZES]
    unit = "us"

    def setup(self, f, sizes):
        self.inputs = graph(*sizes, 1)

    def track_fwd(self, f, sizes):
        return benchmark_torch_function_in_microseconds(f, self.inputs["index"], self.inputs["num_nodes"])


class Activation:
    param_names = ["f", "n"]
    params = [[torch.relu, torch.sigmoid, lambda x: x * torch.sigmoid(x)], [64, 1024]]
    unit = "us"

    def setup(self, f, n):
        self.x = torch.randn(n)

    def track_fwd(self, f, n):
        return benchmark_torch_function_in_microseconds(f, self.x)
'''

MODULE = "graphlib/__init__.py"


def make_repo(path: Path) -> tuple[str, str, str]:
    """graphlib's repository at `path`: (its base commit, a docstring reworded, segment_softmax slowed), the
    base checked out."""
    repo = git.Repo.init(path, initial_branch="main")
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "bench").set_value("user", "email", "bench@example.com")
    files = {"pyproject.toml": PYPROJECT, MODULE: LIBRARY.format(extra=""), "benchmarks/__init__.py": "",
             "benchmarks/bench_graph.py": SUITE, "README": "graphlib\n"}
    for rel, text in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    repo.index.add(list(files))
    base = repo.index.commit("graphlib and its asv suite").hexsha
    (path / MODULE).write_text(LIBRARY.format(extra="").replace("The softmax of each node's incoming edges' values.",
                                                                "Each node's incoming edges' values, softmaxed."))
    repo.index.add([MODULE])
    docs = repo.index.commit("graphlib: reword a docstring").hexsha
    repo.git.checkout("--detach", base)
    (path / MODULE).write_text(LIBRARY.format(extra=EXTRA))
    repo.index.add([MODULE])
    slower = repo.index.commit("segment_softmax: a little more compute").hexsha
    repo.git.checkout("--detach", base)
    return base, docs, slower


TARGET = "segment_softmax"  # the rows the slower commit changes (their name holds the function's repr)


def alert(repo: Path, base: str, head: str, out: Path, log: Path, extra: tuple[str, ...] = ()) -> tuple[dict, float]:
    """`torchbench alert` with its defaults (the 9-minute budget, counts on; `extra` flags added), no flame
    graphs; its report."""
    import json
    import subprocess
    import sys
    import time

    root = Path(__file__).resolve().parents[1]
    start = time.perf_counter()
    with open(log, "w") as f:
        proc = subprocess.run([sys.executable, "-m", "torchbench", "alert", "--repo", str(repo), "--base", base,
                               "--head", head, "--out", str(out), "--env-dir", str(out.parent / "envs"),
                               "--no-profile", "--json", str(log.with_suffix(".json")), *extra], stdout=f,
                              stderr=subprocess.STDOUT, text=True, cwd=root, check=False)
    report = log.with_suffix(".json")
    # (2: some row failed, e.g. graphlib's track_bwd raising NotImplementedError in its method body, which
    # asv_runner counts as a failure; the report still says what every other row did)
    if proc.returncode not in (0, 1, 2, 3) or not report.exists():
        sys.exit(f"torchbench alert exited {proc.returncode}; its log: {log}\n{log.read_text()[-3000:]}")
    return json.loads(report.read_text()), time.perf_counter() - start


def summary(name: str, report: dict, seconds: float, target_name: str | None) -> dict:
    """A pair's alert in short: its statuses, the rows counted, flagged rows other than the targets (those whose
    name holds `target_name`; None: an A/A pair, every flagged row is false), each target's verdict."""
    rows = report["rows"]
    target = [r for r in rows if target_name and target_name in r["name"]]
    others = [r for r in rows if r not in target]
    flagged = [r for r in others if r["status"] in ("regressed", "improved")]
    by: dict[str, int] = {}
    for r in rows:
        by[r["status"]] = by.get(r["status"], 0) + 1
    return {"pair": name, "rows": len(rows), "statuses": by,
            "counted": sum(1 for r in rows if r.get("counts_delta") is not None),
            "false": [(r["name"], r["status"], r.get("decided_by")) for r in flagged],
            "targets": [(r["name"], r["status"], r.get("decided_by"), r.get("counts_delta")) for r in target],
            "phases": report["time_spent"].get("phases"), "rounds": report["time_spent"].get("rounds"),
            "alert_seconds": seconds}


def beside_asv(out: Path, folder: Path, base: str, head: str, target_name: str | None) -> dict:
    """`asv continuous` with its defaults on the pair, with the alert's asv configuration (OUT/asv.conf.json),
    its results in `folder`: the rows it flagged among the targets (rows whose name holds `target_name`) and
    the others (false)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from alert_validation import asv_conf, asv_continuous  # noqa: E402

    marks, seconds = asv_continuous(asv_conf(out / "asv.conf.json", folder), base, head)
    flagged = sorted(n for n, m in marks.items() if m in ("+", "-"))
    hit = [n for n in flagged if target_name and target_name in n]
    return {"rows": len(marks), "seconds": seconds, "targets_flagged": hit,
            "false": [n for n in flagged if n not in hit]}


def trial(prefix: str, make, target_name: str, pairs: list[str], out_file: Path | None, with_asv: bool,
          alert_args: str = "") -> list[dict]:
    """A repository made by `make(folder)` -> (path, base, {key: (name, head, targeted)}), in a temporary folder
    named `prefix`: each pair of `pairs` (keys) through `torchbench alert` with its defaults (`alert_args`
    added: e.g. "--max-rounds 2" where only the counting is looked at), beside `asv
    continuous` with its defaults where `with_asv`; each summary (the counting's log lines too) printed, and
    all written to `out_file` as JSON. The folder is removed after."""
    import json
    import shutil
    import tempfile

    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    found = []
    try:
        path, base, made = make(tmp)
        out = tmp / "out"
        for key in pairs:
            name, head, targeted = made[key]
            target = target_name if targeted else None
            print(f"== torchbench alert {name}: {base[:8]}..{head[:8]}", flush=True)
            log = tmp / f"alert-{key}.log"
            report, seconds = alert(path, base, head, out, log, tuple(alert_args.split()))
            row = summary(name, report, seconds, target)
            row["log"] = [line for line in log.read_text().splitlines()
                          if line.startswith(("== instruction", "   per row"))]
            if with_asv:
                row["asv_continuous"] = beside_asv(out, tmp / f"asv-{key}", base, head, target)
            found.append(row)
            print(json.dumps(row, indent=1), flush=True)
        if out_file:
            out_file.write_text(json.dumps(found, indent=1))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return found


def main() -> None:
    """graphlib's A/A pair (a reworded docstring) and its slower commit through `torchbench alert` with its
    defaults, each beside `asv continuous` with its defaults on the same pair."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--out", type=Path, help="write the summaries here as JSON")
    parser.add_argument("--no-asv", action="store_true", help="leave out asv continuous")
    parser.add_argument("--alert-args", default="", metavar="FLAGS",
                        help="flags added to each alert, e.g. \"--max-rounds 2\" to look at the counting alone")
    args = parser.parse_args()

    def make(tmp: Path):
        path = tmp / "graphlib"
        path.mkdir()
        base, docs, slower = make_repo(path)
        return path, base, {"aa": ("A/A (a reworded docstring)", docs, False),
                            "slower": ("segment_softmax slowed", slower, True)}

    trial("track-suite-", make, TARGET, ["aa", "slower"], args.out, not args.no_asv, args.alert_args)


if __name__ == "__main__":
    main()
