"""A real library's plain asv suite: einops 0.8.1 from the package index, 42 `time_` rows (issues 61 and 63).

einops keeps no asv suite of its own; this one is written as its maintainers would write one, over its public
API at the sizes its tests use (1-30 us a call on CPU):

    Rearrange.time_rearrange   5 patterns x batch 1 and 8          10
    Reduce.time_reduce         3 patterns x mean/max/sum x 2 sizes 18
    Repeat.time_repeat         3 patterns                           3
    Einsum.time_einsum         2 patterns                           2
    Packing.time_pack          3 sizes                              3
    Packing.time_unpack        3 sizes                              3
    Layers.time_layer          einops.layers.torch's Rearrange, Reduce, EinMix   3

`make_repo` vendors the wheel's sources (downloaded with pip, no dependencies) as the project, and gives three
commits: its base, one that rewords a docstring (A/A), and one that adds a little compute to `pack` (a loop
over 16 numbers, after its docstring: a few percent of its 3 rows' instructions, as the slowdown issue 63
found in `unpack`; the first run of this script meant `unpack` and, its docstring's last line being pack's
too, slowed `pack`: the alert named pack's rows, so the script now says what it does).

    python evaluation/einops_suite.py [--out FILE] [--no-asv] [--wide] [--loop N]

prints, for each pair, what `torchbench alert` decided with its defaults (the 9-minute budget, counts on), what
its counting cost and confirmed, beside `asv continuous` on the same pair (its defaults).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import git

VERSION = "0.8.1"
PYPROJECT = f"""\
[build-system]
requires = ["flit_core>=3.4,<4"]
build-backend = "flit_core.buildapi"

[project]
name = "einops"
version = "{VERSION}"
description = "einops {VERSION}'s sources, vendored, with an asv suite"
"""

SUITE = '''"""einops' asv suite: its public API on small CPU tensors."""
import torch

import einops
from einops.layers.torch import EinMix, Rearrange as RearrangeLayer, Reduce as ReduceLayer

torch.manual_seed(0)


class Rearrange:
    params = [["b c h w -> b h w c", "b c h w -> b (c h w)", "b c (h h2) (w w2) -> b (c h2 w2) h w",
               "b (g c) h w -> g b c h w", "b c h w -> w h c b"], [1, 8]]
    param_names = ["pattern", "batch"]

    def setup(self, pattern, batch):
        self.x = torch.randn(batch, 4, 8, 8)
        self.lengths = {"h2": 2, "w2": 2} if "h2" in pattern else {"g": 2} if "(g c)" in pattern else {}

    def time_rearrange(self, pattern, batch):
        einops.rearrange(self.x, pattern, **self.lengths)


class Reduce:
    params = [["b c h w -> b c", "b c (h 2) (w 2) -> b c h w", "b c h w -> c"], ["mean", "max", "sum"], [8, 32]]
    param_names = ["pattern", "reduction", "side"]

    def setup(self, pattern, reduction, side):
        self.x = torch.randn(2, 4, side, side)

    def time_reduce(self, pattern, reduction, side):
        einops.reduce(self.x, pattern, reduction)


class Repeat:
    params = [["h w -> h w c", "h w -> (h 2) (w 2)", "b h w -> b h w c"]]
    param_names = ["pattern"]

    def setup(self, pattern):
        self.x = torch.randn(*((2, 8, 8) if pattern.startswith("b") else (8, 8)))
        self.lengths = {"c": 3} if " c" in pattern else {}

    def time_repeat(self, pattern):
        einops.repeat(self.x, pattern, **self.lengths)


class Einsum:
    params = [["b i d, b j d -> b i j", "i j, j k -> i k"]]
    param_names = ["pattern"]

    def setup(self, pattern):
        self.args = ((torch.randn(2, 8, 4), torch.randn(2, 8, 4)) if pattern.startswith("b")
                     else (torch.randn(8, 4), torch.randn(4, 8)))

    def time_einsum(self, pattern):
        einops.einsum(*self.args, pattern)


class Packing:
    params = [[4, 16, 64]]
    param_names = ["n"]

    def setup(self, n):
        self.inputs = [torch.randn(2, 3, n), torch.randn(2, 3, n, 5)]
        self.packed, self.shapes = einops.pack(self.inputs, "i j *")

    def time_pack(self, n):
        einops.pack(self.inputs, "i j *")

    def time_unpack(self, n):
        einops.unpack(self.packed, self.shapes, "i j *")


class Layers:
    params = [["rearrange", "reduce", "einmix"]]
    param_names = ["layer"]

    def setup(self, layer):
        self.layer = {"rearrange": lambda: RearrangeLayer("b c h w -> b (h w) c"),
                      "reduce": lambda: ReduceLayer("b c (h 2) (w 2) -> b c h w", "max"),
                      "einmix": lambda: EinMix("b t c -> b t c_out", weight_shape="c c_out", c=4, c_out=8)}[layer]()
        self.x = torch.randn(2, 3, 4) if layer == "einmix" else torch.randn(2, 4, 8, 8)

    def time_layer(self, layer):
        self.layer(self.x)
'''

# `--wide`: 22 more rows, as a maintainer adding the 3-d patterns of attention code, parse_shape, the other
# reductions and packs of three inputs would (64 rows: issue 63's 64-row goal of 1-30 us rows)
MORE = '''"""einops' asv suite, more of its API: sequence-shaped tensors, parse_shape, other reductions."""
import torch

import einops

torch.manual_seed(0)


class Sequence:
    params = [["b t c -> t b c", "b t c -> (b t) c", "(b t) c -> b t c", "b t (h d) -> b h t d"], [1, 8]]
    param_names = ["pattern", "batch"]

    def setup(self, pattern, batch):
        self.x = torch.randn(batch * 6, 8) if pattern.startswith("(") else torch.randn(batch, 6, 8)
        self.lengths = {"b": batch} if pattern.startswith("(") else {"h": 2} if "(h d)" in pattern else {}

    def time_sequence(self, pattern, batch):
        einops.rearrange(self.x, pattern, **self.lengths)


class ParseShape:
    params = [["b c h w", "b _ h w", "b c _ _"]]
    param_names = ["pattern"]

    def setup(self, pattern):
        self.x = torch.randn(2, 4, 8, 8)

    def time_parse_shape(self, pattern):
        einops.parse_shape(self.x, pattern)


class OtherReductions:
    params = [["b c h w -> b", "b c h w -> b h w"], ["min", "prod"]]
    param_names = ["pattern", "reduction"]

    def setup(self, pattern, reduction):
        self.x = torch.rand(2, 4, 8, 8) + 0.5

    def time_reduce(self, pattern, reduction):
        einops.reduce(self.x, pattern, reduction)


class Broadcast:
    params = [["c -> b c", "h w -> b h w"]]
    param_names = ["pattern"]

    def setup(self, pattern):
        self.x = torch.randn(8) if pattern.startswith("c") else torch.randn(8, 8)

    def time_repeat(self, pattern):
        einops.repeat(self.x, pattern, b=4)


class Attention:
    params = [["b h i d, b h j d -> b h i j", "i, i ->"]]
    param_names = ["pattern"]

    def setup(self, pattern):
        self.args = ((torch.randn(1, 2, 8, 4), torch.randn(1, 2, 8, 4)) if pattern.startswith("b")
                     else (torch.randn(16), torch.randn(16)))

    def time_einsum(self, pattern):
        einops.einsum(*self.args, pattern)


class PackThree:
    params = [[4, 32, 128]]
    param_names = ["n"]

    def setup(self, n):
        self.inputs = [torch.randn(n, 3), torch.randn(2, n, 3), torch.randn(3)]

    def time_pack(self, n):
        einops.pack(self.inputs, "* d")
'''

PACKING = "einops/packing.py"
MARK = "    Read the tutorial for introduction and application scenarios.\n    \"\"\"\n"
SLOWER = "    _ = sum(i * i for i in range({loop}))  # a little more compute\n"
LOOP = 16  # the loop's numbers: 16 moved pack's rows' counts by +13.6-15.6% (--loop 2: a few percent)
TARGET = "time_pack"  # the rows the slower commit changes


def sources(into: Path) -> Path:
    """einops' wheel from the package index, its sources unpacked under `into`/src."""
    subprocess.run([sys.executable, "-m", "pip", "download", f"einops=={VERSION}", "--no-deps", "-q", "-d",
                    str(into)], check=True)
    (wheel,) = into.glob("einops-*.whl")
    src = into / "src"
    subprocess.run([sys.executable, "-m", "zipfile", "-e", str(wheel), str(src)], check=True)
    return src / "einops"


def make_repo(path: Path, package: Path, wide: bool = False, loop: int = LOOP) -> tuple[str, str, str]:
    """The repository at `path`: (its base commit, a docstring reworded, pack slowed by a loop over `loop`
    numbers), the base checked out; `wide`: the suite's 22 more rows (MORE) beside its 42."""
    import shutil

    repo = git.Repo.init(path, initial_branch="main")
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "bench").set_value("user", "email", "bench@example.com")
    shutil.copytree(package, path / "einops", ignore=shutil.ignore_patterns("tests", "__pycache__"))
    files = {"pyproject.toml": PYPROJECT, "benchmarks/__init__.py": "", "benchmarks/bench_ops.py": SUITE,
             "README": f"einops {VERSION}\n", **({"benchmarks/bench_more.py": MORE} if wide else {})}
    for rel, text in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    repo.git.add(".")
    base = repo.index.commit(f"einops {VERSION} and an asv suite").hexsha
    text = (path / PACKING).read_text()
    assert MARK in text, "unpack's docstring is not where this script expects it"
    (path / PACKING).write_text(text.replace("Unpacks a single tensor into several", "Splits one tensor into several"))
    repo.index.add([PACKING])
    docs = repo.index.commit("packing: reword a docstring").hexsha
    repo.git.checkout("--detach", base)
    at = text.index(MARK, text.index("\ndef pack(")) + len(MARK)  # after pack's docstring
    (path / PACKING).write_text(text[:at] + SLOWER.format(loop=loop) + text[at:])
    repo.index.add([PACKING])
    slower = repo.index.commit("pack: a little more compute").hexsha
    repo.git.checkout("--detach", base)
    return base, docs, slower


def main() -> None:
    """einops' A/A pair and its slower commit through `torchbench alert` with its defaults, each beside
    `asv continuous` with its defaults on the same pair."""
    import argparse

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from track_suite import trial

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--out", type=Path, help="write the summaries here as JSON")
    parser.add_argument("--no-asv", action="store_true", help="leave out asv continuous")
    parser.add_argument("--pairs", nargs="+", default=["aa", "slower"], choices=["aa", "slower"])
    parser.add_argument("--alert-args", default="", metavar="FLAGS",
                        help="flags added to each alert, e.g. \"--max-rounds 2\" to look at the counting alone")
    parser.add_argument("--wide", action="store_true", help="64 rows: 22 more beside the 42 (MORE)")
    parser.add_argument("--loop", type=int, default=LOOP,
                        help=f"the numbers pack's added loop sums (default {LOOP}: counts +14-16%%; 2: a few percent)")
    args = parser.parse_args()

    def make(tmp: Path):
        path = tmp / "einops-repo"
        path.mkdir()
        base, docs, slower = make_repo(path, sources(tmp / "wheel"), args.wide, args.loop)
        return path, base, {"aa": ("A/A (a reworded docstring)", docs, False), "slower": ("pack slowed", slower, True)}

    trial("einops-suite-", make, TARGET, args.pairs, args.out, not args.no_asv, args.alert_args)


if __name__ == "__main__":
    main()
