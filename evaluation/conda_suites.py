"""Two real libraries' asv suites with conda configurations as written, run from inside their repositories on a
machine without conda (issue 62's goal).

Each library comes from the package index, its sources vendored as the project, with an asv suite and an
asv configuration written for conda, as torch libraries write theirs (conda's names, no `branches`):

    einops 0.8.1       benchmarks/asv.conf.json: environment_type conda, matrix pytorch, pytorch-cuda, numpy;
                       its 42 `time_` rows (evaluation/einops_suite.py), run from benchmarks/
    torch_geometric    asv_bench/asv-pyg.json (another name: --config, as asv needs it): environment_type conda,
    2.8.1              matrix pytorch, pytorch-cuda, pytorch-scatter, pytorch-sparse and the scipy of its day
                       (1.11.4, which needs a numpy older than torchbench's pin); Timer-in-`track_` rows of
                       `torch_geometric.utils.softmax` and a dense softmax passed as asv parameters, `time_` rows
                       of its scatter, a row of the optional torch_scatter extension, cpu and cuda parameters;
                       run from asv_bench/

Each gets three commits: its base, an A/A commit (a reworded docstring) and one with a little compute added to
the function its target rows call (einops' `pack`, torch_geometric's `softmax`). From inside the folder that
holds the configuration, with no location flags: `torchbench run --last 2`, `torchbench publish`, `torchbench
alert BASE..AA` and `torchbench alert BASE..SLOWER` with the alert's defaults; beside them `asv run --quick`
with the same configuration (asv needs conda for it). Prints and writes (--out) what each step did: its exit
status, minutes, the lines torchbench said about the configuration, and each alert's verdict, the rows flagged
among the targets and the others.

    python evaluation/conda_suites.py [--out FILE] [--libraries einops pyg] [--pairs aa slower]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import git

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import einops_suite  # noqa: E402

PYG_VERSION = "2.8.1"
PYG_PYPROJECT = f"""\
[build-system]
requires = ["flit_core>=3.4,<4"]
build-backend = "flit_core.buildapi"

[project]
name = "torch_geometric"
version = "{PYG_VERSION}"
description = "torch_geometric {PYG_VERSION}'s sources, vendored, with an asv suite"
dependencies = ["aiohttp", "fsspec", "jinja2", "numpy", "psutil>=5.8.0", "pyparsing", "requests", "tqdm", "xxhash"]
"""
PYG_CONF = {"version": 1, "project": "torch_geometric", "project_url": "https://github.com/pyg-team/pytorch_geometric",
            "repo": "..", "dvcs": "git", "environment_type": "conda", "benchmark_dir": "benchmarks",
            "matrix": {"pytorch": "", "pytorch-cuda": "12.1", "pytorch-scatter": "", "pytorch-sparse": "",
                       "scipy": "1.11.4"},
            "env_dir": ".asv/env", "results_dir": ".asv/results", "html_dir": ".asv/html"}
PYG_SUITE = '''"""torch_geometric's asv suite: softmax over graph segments, scatter, and the optional torch_scatter."""
import torch
from torch.utils.benchmark import Timer

from torch_geometric.utils import scatter, softmax


def dense_softmax(x, index):
    x = x.view(-1, x.size(-1) if x.dim() > 1 else 1)
    return x.softmax(dim=-1)


def graph(num_nodes, num_edges, device):
    torch.manual_seed(12345)
    index = torch.randint(num_nodes, (num_edges,), device=device).sort().values
    return torch.randn(num_edges, 8, device=device), index


class Softmax:
    params = [[softmax, dense_softmax], [1000, 10000], ["cpu", "cuda"]]
    param_names = ["f", "num_nodes", "device"]

    def setup(self, f, num_nodes, device):
        self.x, self.index = graph(num_nodes, 4 * num_nodes, device)

    def track_fwd(self, f, num_nodes, device):
        timer = Timer("f(x, index)", globals={"f": f, "x": self.x, "index": self.index})
        return timer.blocked_autorange(min_run_time=0.2).median * 1e6

    track_fwd.unit = "us"


class Scatter:
    params = [["sum", "mean", "max"], [1000, 10000], ["cpu", "cuda"]]
    param_names = ["reduce", "num_nodes", "device"]

    def setup(self, reduce, num_nodes, device):
        self.x, self.index = graph(num_nodes, 4 * num_nodes, device)
        self.num_nodes = num_nodes

    def time_scatter(self, reduce, num_nodes, device):
        scatter(self.x, self.index, dim=0, dim_size=self.num_nodes, reduce=reduce)


class ScatterExtension:
    """The optional torch_scatter extension, where it is installed."""

    def setup(self):
        import torch_scatter

        self.scatter = torch_scatter.scatter
        self.x, self.index = graph(1000, 4000, "cpu")

    def time_scatter_sum(self):
        self.scatter(self.x, self.index, dim=0, reduce="sum")
'''
PYG_SOFTMAX = "torch_geometric/utils/_softmax.py"
PYG_SLOWER = "    _ = sum(i * i for i in range(1024))  # more compute: ~15% of a 1000-node call, ~2% of 10000\n"
PYG_TARGET = "softmax.Softmax.track_fwd(<function softmax"


def _commit(repo: git.Repo, files: dict[str, str], message: str) -> str:
    for rel, text in files.items():
        target = Path(repo.working_dir) / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        repo.index.add([rel])
    return repo.index.commit(message).hexsha


def einops_repo(tmp: Path) -> dict:
    path = tmp / "einops"
    path.mkdir()
    base, docs, slower = einops_suite.make_repo(path, einops_suite.sources(tmp / "einops-wheel"))
    repo = git.Repo(path)
    conf = {"version": 1, "project": "einops", "project_url": "https://github.com/arogozhnikov/einops",
            "repo": "..", "dvcs": "git", "environment_type": "conda", "benchmark_dir": ".",
            "matrix": {"pytorch": "", "pytorch-cuda": "12.1", "numpy": ""}}
    # the configuration goes into every commit (a suite's conf lives with it): replay the three on top of it
    repo.git.checkout("main")
    repo.git.reset("--hard", base)
    conf_base = _commit(repo, {"benchmarks/asv.conf.json": json.dumps(conf, indent=4) + "\n"},
                        "benchmarks: an asv configuration for conda")
    repo.git.cherry_pick(docs)
    docs2 = repo.head.commit.hexsha
    repo.git.checkout("--detach", conf_base)
    repo.git.cherry_pick(slower)
    slower2 = repo.head.commit.hexsha
    repo.git.checkout("main")
    return {"name": f"einops {einops_suite.VERSION}", "path": path, "here": path / "benchmarks", "config": [],
            "conf": path / "benchmarks" / "asv.conf.json", "base": conf_base, "aa": docs2, "slower": slower2,
            "target": einops_suite.TARGET}


def pyg_repo(tmp: Path) -> dict:
    subprocess.run([sys.executable, "-m", "pip", "download", f"torch-geometric=={PYG_VERSION}", "--no-deps", "-q",
                    "-d", str(tmp / "pyg-wheel")], check=True)
    (wheel,) = (tmp / "pyg-wheel").glob("torch_geometric-*.whl")
    src = tmp / "pyg-src"
    subprocess.run([sys.executable, "-m", "zipfile", "-e", str(wheel), str(src)], check=True)
    path = tmp / "pytorch_geometric"
    path.mkdir()
    repo = git.Repo.init(path, initial_branch="master")
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "bench").set_value("user", "email", "bench@example.com")
    shutil.copytree(src / "torch_geometric", path / "torch_geometric", ignore=shutil.ignore_patterns("__pycache__"))
    repo.git.add("torch_geometric")
    base = _commit(repo, {"pyproject.toml": PYG_PYPROJECT, "README.md": f"torch_geometric {PYG_VERSION}\n",
                          "asv_bench/asv-pyg.json": json.dumps(PYG_CONF, indent=4) + "\n",
                          "asv_bench/benchmarks/__init__.py": "", "asv_bench/benchmarks/softmax.py": PYG_SUITE},
                   f"torch_geometric {PYG_VERSION}, an asv suite and its conda configuration")
    text = (path / PYG_SOFTMAX).read_text()
    aa = _commit(repo, {PYG_SOFTMAX: text.replace("Computes a sparsely evaluated softmax.",
                                                  "Computes a softmax, sparsely evaluated.")},
                 "softmax: reword a docstring")
    repo.git.checkout("--detach", base)
    at = text.index('"""', text.index("\ndef softmax("))  # its docstring (a raw string: r""")
    end = text.index('"""', at + 3) + 4
    slower = _commit(repo, {PYG_SOFTMAX: text[:end] + PYG_SLOWER + text[end:]}, "softmax: a little more compute")
    repo.git.checkout("master")
    return {"name": f"torch_geometric {PYG_VERSION}", "path": path, "here": path / "asv_bench",
            "config": ["--config", "asv-pyg.json"], "conf": path / "asv_bench" / "asv-pyg.json", "base": base,
            "aa": aa, "slower": slower, "target": PYG_TARGET}


def torchbench(here: Path, *args, log: Path) -> tuple[int, float, str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(HERE.parent), os.environ.get("PYTHONPATH")])))
    start = time.perf_counter()
    with open(log, "w") as f:
        proc = subprocess.run([sys.executable, "-m", "torchbench", *map(str, args)], cwd=here, env=env, stdout=f,
                              stderr=subprocess.STDOUT, text=True)
    return proc.returncode, (time.perf_counter() - start) / 60, log.read_text()


def trial(lib: dict, tmp: Path, pairs: tuple[str, ...] = ("aa", "slower")) -> dict:
    here, config, target = lib["here"], lib["config"], lib["target"]
    out: dict = {"library": lib["name"], "conf": str(lib["conf"].relative_to(lib["path"])), "steps": {}}
    asv_proc = subprocess.run([sys.executable, "-m", "asv", "run", "--quick", "--config", str(lib["conf"]),
                               "--dry-run", "HEAD^!"], cwd=here, capture_output=True, text=True)
    out["asv run --quick"] = {"exit": asv_proc.returncode,
                              "said": [line for line in (asv_proc.stdout + asv_proc.stderr).splitlines()
                                       if "conda" in line.lower()][:3]}
    status, minutes, log = torchbench(here, "run", "--last", 2, *config, log=tmp / f"{lib['path'].name}-run.log")
    out["steps"]["run --last 2"] = {"exit": status, "minutes": round(minutes, 1),
                                    "said": [line for line in log.splitlines() if line.startswith("== ")
                                             and any(w in line for w in ("conda", "matrix", "branch", "pin",
                                                                         "torchbench adds", "left out"))],
                                    "report": log.split("\n== report")[-1].split("\n== where")[0].strip().splitlines()}
    status, minutes, log = torchbench(here, "publish", log=tmp / f"{lib['path'].name}-publish.log")
    out["steps"]["publish"] = {"exit": status, "minutes": round(minutes, 1),
                               "site": (lib["path"] / ".torchbench" / "html" / "index.html").exists()}
    for key in pairs:
        report_file = tmp / f"{lib['path'].name}-{key}.json"
        status, minutes, log = torchbench(here, "alert", f"{lib['base']}..{lib[key]}", *config, "--json",
                                          report_file, log=tmp / f"{lib['path'].name}-{key}.log")
        step = {"exit": status, "minutes": round(minutes, 1)}
        if report_file.exists():
            doc = json.loads(report_file.read_text())
            rows = doc["rows"]
            hit = [r for r in rows if key == "slower" and target in r["name"]]
            flagged = [r for r in rows if r["status"] in ("regressed", "improved") and r not in hit]
            step.update(verdict=doc["verdict"], statuses={s: sum(r["status"] == s for r in rows)
                                                          for s in {r["status"] for r in rows}},
                        targets=[(r["name"], r["status"], r.get("decided_by"), r.get("channels_text")) for r in hit],
                        false=[(r["name"], r["status"], r.get("decided_by")) for r in flagged],
                        failed=[(r["name"], r.get("error")) for r in rows if r["status"] == "failed"])
        else:
            step["log"] = log[-2000:]
        out["steps"][f"alert {key}"] = step
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="write the results here as JSON")
    parser.add_argument("--libraries", nargs="+", default=["einops", "pyg"], choices=["einops", "pyg"])
    parser.add_argument("--pairs", nargs="+", default=["aa", "slower"], choices=["aa", "slower"],
                        help="the alerts to run (default both)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="conda-suites-"))
    found = []
    try:
        for name in args.libraries:
            lib = (einops_repo if name == "einops" else pyg_repo)(tmp)
            print(f"== {lib['name']}: {lib['conf']}", flush=True)
            found.append(trial(lib, tmp, tuple(args.pairs)))
            print(json.dumps(found[-1], indent=1), flush=True)
            if args.out:
                args.out.write_text(json.dumps(found, indent=1) + "\n")
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
