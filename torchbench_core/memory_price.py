"""What a last-level cache miss costs on this machine, in cycles: the price the cycle estimate weighs it at.

callgrind.estimated_cycles weighs valgrind's simulated events as KCachegrind does: an instruction a cycle, a
first-level miss 10, a last-level miss 100. On a 2-core EPYC VM a random load that leaves the caches (a
pointer chase over 128 MB, TLB misses included) took 86 times an L1 hit, about 350 cycles, and over 512 MB
about 560: a one-lookup-per-call walk of a 4M-entry table, +16% of wall time, read +0.6% of estimated cycles
at 100 a miss, under the count test's 1% floor (issue 63).

So the price is measured here, natively: a C pointer chase (one random cycle through the buffer, each load's
address the last load's value, so that no two loads overlap) over L1_BYTES and over RAM_BYTES, the median of
RUNS runs each, and

    miss cycles = L1_LATENCY_CYCLES x (ns a RAM load) / (ns an L1 load)

a ratio of two latencies, so that a loaded machine (which stretches both) and a clock the VM does not report
give the same price; rounded to the grid of half powers of two (256, 362, 512, ...), so that one machine
measured again lands on the same value: the price is part of the counts cache's key (a cached row's cycles
were weighed at it). `price()` measures once and keeps the result per machine in the user's cache folder;
the counting worker reads it from PRICE_ENV.

Needs a C compiler (cc); without one, the price is LL_MISS_CYCLES (KCachegrind's 100) and `why` says so.
"""

from __future__ import annotations

import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = ["L1_BYTES", "L1_LATENCY_CYCLES", "MemoryPrice", "PRICE_ENV", "RAM_BYTES", "cache_folder", "measure", "price"]

PRICE_ENV = "TORCHBENCH_LL_MISS_CYCLES"  # the counting worker's price of a last-level miss (cycles)
LL_MISS_CYCLES = 100  # KCachegrind's price, where none was measured (callgrind.estimated_cycles' default)
L1_BYTES, RAM_BYTES = 16 << 10, 128 << 20  # inside any L1d; 16 times the simulated last level, beyond an L3
L1_LATENCY_CYCLES = 4  # an L1 hit's load-to-use latency on x86 and Arm cores of the last decade (4-5)
STEPS = {L1_BYTES: 20_000_000, RAM_BYTES: 2_000_000}  # loads timed (after a tenth untimed)
RUNS = 3

_CHASE = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
int main(int argc, char **argv) {
    size_t n = strtoull(argv[1], 0, 10) / sizeof(size_t); long steps = atol(argv[2]);
    size_t *a = malloc(n * sizeof(size_t)); uint64_t s = 88172645463325252ull;
    if (!a) return 2;
    for (size_t i = 0; i < n; i++) a[i] = i;
    for (size_t i = n - 1; i > 0; i--) {  /* Sattolo's shuffle: one cycle through every entry */
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        size_t j = s % i, t = a[i]; a[i] = a[j]; a[j] = t;
    }
    size_t p = 0;
    for (long k = 0; k < steps / 10; k++) p = a[p];
    double t0 = now();
    for (long k = 0; k < steps; k++) p = a[p];
    printf("%.6f %zu\n", (now() - t0) / steps * 1e9, p);
    return 0;
}
"""


@dataclass(frozen=True)
class MemoryPrice:
    """A last-level miss's price in cycles, and how it was found (the two latencies; `why` where it was not
    measured)."""

    miss_cycles: int
    l1_ns: float = math.nan
    ram_ns: float = math.nan
    machine: str = ""
    why: str = ""


def _machine() -> str:
    model = ""
    try:
        model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                      if line.startswith("model name")), "")
    except OSError:
        pass
    return f"{platform.node()}|{platform.machine()}|{model}"


def _grid(cycles: float) -> int:
    """The nearest half power of two: 256, 362, 512, 724, ..."""
    return int(round(2 ** (round(2 * math.log2(max(cycles, 1.0))) / 2)))


def measure() -> MemoryPrice:
    """Measure the price here (about 3 s: the chase compiled, then RUNS runs of each size)."""
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        return MemoryPrice(LL_MISS_CYCLES, machine=_machine(), why="no C compiler to measure it with")
    with tempfile.TemporaryDirectory(prefix="torchbench_memory_") as tmp:
        source, program = Path(tmp) / "chase.c", Path(tmp) / "chase"
        source.write_text(_CHASE)
        built = subprocess.run([compiler, "-O2", "-o", str(program), str(source)], capture_output=True, text=True)
        if built.returncode != 0:
            return MemoryPrice(LL_MISS_CYCLES, machine=_machine(), why=f"the chase does not compile: {built.stderr[-300:]}")

        def ns(size: int) -> float:
            runs = []
            for _ in range(RUNS):
                out = subprocess.run([str(program), str(size), str(STEPS[size])], capture_output=True, text=True,
                                     timeout=120, check=True)
                runs.append(float(out.stdout.split()[0]))
            return statistics.median(runs)

        l1, ram = ns(L1_BYTES), ns(RAM_BYTES)
    return MemoryPrice(_grid(L1_LATENCY_CYCLES * ram / l1), l1, ram, _machine())


def cache_folder() -> Path:
    """Where the price is kept: the user's cache ($XDG_CACHE_HOME, else ~/.cache), torchbench's folder."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "torchbench"


def price(folder: Path | None = None) -> MemoryPrice:
    """This machine's price, measured once and kept in FOLDER/memory-price.json (default cache_folder()), by
    machine; measured again where the file is for another machine or unreadable."""
    path = (folder or cache_folder()) / "memory-price.json"
    folder = path.parent
    machine = _machine()
    try:
        kept = MemoryPrice(**json.loads(path.read_text()))
        if kept.machine == machine and kept.miss_cycles > 0:
            return kept
    except (OSError, ValueError, TypeError):
        pass
    found = measure()
    if not found.why:
        from .storage import atomic_write_text

        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(asdict(found), indent=1))
    return found


if __name__ == "__main__":
    print(json.dumps(asdict(measure()), indent=1))
