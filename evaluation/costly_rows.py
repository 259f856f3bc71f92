"""A 40-row suite of layers (0.03-100 ms a call) in the counting's share of the default budget (issue 63),
beside one native process running every row once (the anchor).

The rows are what a vision or sequence library on torch times (its layers at the sizes its models use,
0.03-100 ms a call here; the issue's goal names 1-300 ms), written as its maintainers would write an asv
suite of them:

    Conv.time_conv2d          3x3 convolutions, 16/64 channels x 32/64/128 px    6
    Block.time_block          a ResNet basic block (conv-bn-relu x2 + skip)       4
    Linear.time_linear        a batch of 64 through 256-2048 features             4
    Attention.time_attention  multi-head self-attention, 64-512 tokens            4
    Recurrent.time_lstm       an LSTM over 16/64 steps, 128/256 hidden            4
    Norm.time_norm            batch/layer norm of a 64-channel map                4
    Pool.time_pool            max pool and bilinear upsampling                    4
    Matmul.time_matmul        square matrices, 128-1024                           4
    Spectral.time_fft         2-d FFT, 64-512 px                                  3
    Sort.time_topk            top-k and sort of 10^5-10^6 values                  3

Both sides are the same code (an A/A pair: what is measured is what counting costs, not what it finds). The
counting runs as the alert runs it (schedule.count_both: the plans, the first valgrind process a side, both
at once, confirming beside), in the counting's share of a budget (default: the alert's 9 minutes x
Rounds.count_share). Printed: rows counted on both sides, rows left and why, the counting's seconds, the
anchor's seconds and the ratio.

    python evaluation/costly_rows.py [--budget-minutes 9] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "evaluation"))

from counting_speed import worker  # noqa: E402

from torchbench import tools  # noqa: E402
from torchbench.ab.evidence import Evidence, Side  # noqa: E402
from torchbench.ab.options import Policy, Rounds  # noqa: E402
from torchbench.ab.pair import select_jobs  # noqa: E402
from torchbench.ab.schedule import count_both  # noqa: E402

SUITE = '''import torch
import torch.nn as nn


class Conv:
    params = [[16, 64], [32, 64, 128]]
    param_names = ["channels", "side"]

    def setup(self, channels, side):
        torch.manual_seed(0)
        self.conv = nn.Conv2d(channels, channels, 3, padding=1).eval()
        self.x = torch.randn(1, channels, side, side)

    def time_conv2d(self, channels, side):
        with torch.no_grad():
            self.conv(self.x)


class Block:
    params = [[32, 64], [28, 56]]
    param_names = ["channels", "side"]

    def setup(self, channels, side):
        torch.manual_seed(0)
        self.block = nn.Sequential(nn.Conv2d(channels, channels, 3, padding=1, bias=False), nn.BatchNorm2d(channels),
                                   nn.ReLU(), nn.Conv2d(channels, channels, 3, padding=1, bias=False),
                                   nn.BatchNorm2d(channels)).eval()
        self.x = torch.randn(2, channels, side, side)

    def time_block(self, channels, side):
        with torch.no_grad():
            torch.relu(self.block(self.x) + self.x)


class Linear:
    params = [256, 512, 1024, 2048]
    param_names = ["features"]

    def setup(self, features):
        torch.manual_seed(0)
        self.linear = nn.Linear(features, features)
        self.x = torch.randn(64, features)

    def time_linear(self, features):
        with torch.no_grad():
            self.linear(self.x)


class Attention:
    params = [64, 128, 256, 512]
    param_names = ["tokens"]

    def setup(self, tokens):
        torch.manual_seed(0)
        self.attention = nn.MultiheadAttention(256, 8, batch_first=True).eval()
        self.x = torch.randn(1, tokens, 256)

    def time_attention(self, tokens):
        with torch.no_grad():
            self.attention(self.x, self.x, self.x, need_weights=False)


class Recurrent:
    params = [[16, 64], [128, 256]]
    param_names = ["steps", "hidden"]

    def setup(self, steps, hidden):
        torch.manual_seed(0)
        self.lstm = nn.LSTM(hidden, hidden, batch_first=True).eval()
        self.x = torch.randn(4, steps, hidden)

    def time_lstm(self, steps, hidden):
        with torch.no_grad():
            self.lstm(self.x)


class Norm:
    params = [["batch", "layer"], [32, 96]]
    param_names = ["kind", "side"]

    def setup(self, kind, side):
        torch.manual_seed(0)
        self.norm = (nn.BatchNorm2d(64) if kind == "batch" else nn.LayerNorm([64, side, side])).eval()
        self.x = torch.randn(4, 64, side, side)

    def time_norm(self, kind, side):
        with torch.no_grad():
            self.norm(self.x)


class Pool:
    params = [["max", "upsample"], [64, 128]]
    param_names = ["kind", "side"]

    def setup(self, kind, side):
        self.x = torch.randn(2, 32, side, side)

    def time_pool(self, kind, side):
        if kind == "max":
            nn.functional.max_pool2d(self.x, 3, stride=2, padding=1)
        else:
            nn.functional.interpolate(self.x, scale_factor=2, mode="bilinear", align_corners=False)


class Matmul:
    params = [128, 256, 512, 1024]
    param_names = ["n"]

    def setup(self, n):
        torch.manual_seed(0)
        self.a, self.b = torch.randn(n, n), torch.randn(n, n)

    def time_matmul(self, n):
        self.a @ self.b


class Spectral:
    params = [64, 256, 512]
    param_names = ["side"]

    def setup(self, side):
        torch.manual_seed(0)
        self.x = torch.randn(4, side, side)

    def time_fft(self, side):
        torch.fft.rfft2(self.x)


class Sort:
    params = [100_000, 300_000, 1_000_000]
    param_names = ["n"]

    def setup(self, n):
        torch.manual_seed(0)
        self.x = torch.randn(n)

    def time_topk(self, n):
        self.x.topk(100)
        self.x.sort()
'''


def make_suite(folder: Path) -> Path:
    """The 40-row suite under `folder`; its folder."""
    suite = folder / "benchmarks"
    suite.mkdir()
    (suite / "__init__.py").write_text("")
    (suite / "bench_layers.py").write_text(SUITE)
    return suite


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget-minutes", type=float, default=Rounds().budget_minutes)
    parser.add_argument("--out", type=Path, help="write the figures here as JSON")
    args = parser.parse_args()
    valgrind = tools.find("valgrind")
    if valgrind is None:
        sys.exit("valgrind is not installed")
    with tempfile.TemporaryDirectory(prefix="costly_rows_") as tmp_name:
        tmp = Path(tmp_name)
        suite = make_suite(tmp)
        (tmp / "cache").mkdir()
        env = dict(os.environ, PYTHONHASHSEED="0")
        listing, _ = worker("list", suite, [], env, tmp / "cache")
        sides = {}
        for name in ("base", "head"):
            (tmp / name).mkdir()
            sides[name] = Side(name, name, tmp / name, Path(sys.executable))
        evidence = Evidence()
        jobs = select_jobs({name: listing for name in sides}, [], evidence)  # both sides' rows, as the alert's
        native, anchor = worker("run", suite, [list(j) for j in jobs], env, tmp / "cache")
        call_ms = sorted(1e3 * min(r["samples"]) for r in native if "samples" in r)
        share = 60 * args.budget_minutes * Rounds().count_share
        started = time.monotonic()
        count_both(tmp / "counts", valgrind, suite, sides, jobs, evidence, Policy(), tmp / "cache",
                   deadline=started + share)
        counting = time.monotonic() - started
    both = [job for job in jobs if all(evidence.counts[side].get(job) for side in sides)]
    why = collections.Counter(_reason(evidence.uncounted["base"].get(job, "")) for job in jobs if job not in both)
    found = {"rows": len(jobs), "call_ms": [round(call_ms[0], 2), round(call_ms[len(call_ms) // 2], 2),
                                           round(call_ms[-1], 2)],
             "counted_both_sides": len(both), "left": dict(why), "counting_seconds": round(counting, 1),
             "share_seconds": share, "anchor_seconds": round(anchor, 1), "notes": evidence.notes}
    print(f"== a {len(jobs)}-row suite of {call_ms[0]:.1f}-{call_ms[-1]:.0f} ms rows (median {found['call_ms'][1]} ms)"
          f", counted as the alert counts in its {share:.0f} s share of a {args.budget_minutes:g}-minute budget")
    print(f"  rows counted on both sides            {len(both)} of {len(jobs)}")
    for reason, n in why.most_common():
        print(f"  left to wall time: {n:3d}  {reason}")
    print(f"  counting (plans, both sides at once)  {counting:7.1f} s")
    print(f"  anchor: a native process, every row once {anchor:7.1f} s   ratio {counting / anchor:5.1f}x")
    if args.out:
        args.out.write_text(json.dumps(found, indent=1))


def _reason(text: str) -> str:
    """A reason without its row's figures, to count rows by it."""
    if "set-up takes" in text:
        return "its set-up alone past the counting's share"
    if "share of the budget ran out" in text:
        return "the counting's share ran out first"
    if "outlasted its share" in text:
        return "its set-up and runs outlasted its share"
    return text.split(":")[0] or "no reason"


if __name__ == "__main__":
    main()
