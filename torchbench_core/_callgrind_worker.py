"""Runs inside valgrind: counts instructions for a batch of statements in one process.

Self-contained on purpose (stdlib and torch only): it is started by path under
valgrind, where importing more would cost minutes. Cases arrive pickled, one by one, on
stdin (never from a file on disk); progress and results go, one JSON line per
event, to the manifest path given as argv[1], so a crash loses nothing
already reported.

Repeatability: every repeat must start from the same state. CPython 3.11
quickens a code object after a few loop iterations and specialises each
bytecode instruction after tens of executions; until then counts drift by
several percent (this is most of the 3% spread torch shows: it warms up with
min(number, 10) runs of a 100x unrolled loop, whose every copy of the
statement is a separate instruction to specialise). So the loop is not
unrolled (its fixed cost is what the baseline measures) and the statement
runs WARMUP_RUNS times before anything is counted. The GC is collected and
then disabled around each counted region. The parent pins PYTHONHASHSEED and
glibc malloc's dynamic thresholds.
"""

import collections
import functools
import gc
import importlib.machinery
import io
import json
import operator
import pickle
import sys
import textwrap
import traceback

_TEMPLATE = """
def _tb_inner(_stmt=None, _setup=None):
{setup}
    _loops = yield
    while True:
        for _ in _loops:
{stmt}
            pass
        _loops = yield
"""


WARMUP_RUNS = 128  # statement runs before counting: every instruction specialises
WARMUP_SENDS = 64  # resumptions before counting: the per-block path specialises too
# a case's warm-up in its layout draws after the first: its code specialised in the first draw's warm-up (the
# same code objects: a statement's template is compiled once a case), so a later draw's warm-up only settles
# the allocator around the draw's new objects. The full warm-up in every draw was most of a jittered process's
# time (8 draws of a 1-100 us call: 8 x 128 warm-up calls against 8 x 16-64 counted ones)
LATER_WARMUP = 8


class _FoundIn:
    """Finds one top-level module in one folder, as asv_runner's SpecificImporter does for a suite."""

    def __init__(self, name, folder):
        self.name, self.folder = name, folder

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        return importlib.machinery.PathFinder.find_spec(fullname, [self.folder], target)


def _build(case, torch):
    namespace = dict(case["globals"])
    namespace.setdefault("torch", torch)
    # TorchScript cannot be pickled; it arrives as torch.jit.save bytes.
    for name, blob in case.get("scripted", {}).items():
        namespace[name] = torch.jit.load(io.BytesIO(blob))
    code = _TEMPLATE.format(
        setup=textwrap.indent(case["setup"] or "pass", " " * 4),
        stmt=textwrap.indent(case["stmt"] or "pass", " " * 12),
    )
    exec(_compiled(code), namespace)
    gen = namespace["_tb_inner"](case.get("stmt_fn"), case.get("setup_fn"))
    next(gen)
    return gen, range(case["number"])


@functools.lru_cache(maxsize=64)
def _compiled(code):
    """The template's code, compiled once a text: a case's layout draws run the same code objects, which CPython
    specialises in place, so the first draw's warm-up serves the later ones (LATER_WARMUP)."""
    return compile(code, "<torchbench_core.callgrind>", "exec")


def _warm_up(gen, loops, runs=WARMUP_RUNS):
    """`runs` runs (at least a block's), then half as many resumptions (at most WARMUP_SENDS) of one run: a
    costly statement's plan asks fewer than WARMUP_RUNS (asv_worker._plan_statement)."""
    gen.send(range(max(runs, len(loops))))
    for _ in range(min(WARMUP_SENDS, max(1, runs // 2))):
        gen.send(range(1))
    # End on the object the counted blocks use: resuming the generator drops
    # its previous iterable, and freeing a warm-up range would be counted.
    gen.send(loops)


def _nothing():
    pass


AGREED_REPEATS = 2  # a case that says how close its repeats must agree stops at this many once they do


def dump_totals(path):
    """A callgrind out file's total of each event (its `events:` line and its `summary:` or `totals:` line,
    near its top: the rest is its functions), an event the totals leave out 0; None where it has neither line.
    Here, not in callgrind.py (which reads its dumps with it), because this worker imports nothing of ours."""
    names, totals = None, None
    with open(path) as f:
        for line in f:
            if line.startswith("events:"):
                names = line.split()[1:]
            elif line.startswith(("summary:", "totals:")):
                totals = [int(x) for x in line.split()[1:]]
            if names is not None and totals is not None:
                return {name: (totals[i] if i < len(totals) else 0) for i, name in enumerate(names)}
    return None


# Code whose path follows memory addresses, not the code: the memory allocators, glibc's malloc (its malloc.c and
# arena.c, by file where its debug symbols name them: Debian's valgrind depends on libc6-dbg) and CPython's
# small-object allocator (obmalloc.c), whose paths follow the heap's state; and CPython 3.11's type cache's misses
# (find_name_in_mro, assign_version_tag): the cache is indexed by a name's address and the type's version tag,
# so which lookups collide follows where the interned names landed at import. A commit that changes code nobody
# runs moves both: the same torch op counted 948,787-956,401 instructions over 100 calls in eight memory layouts
# (shifts before the imports, objects allocated after them), and 804,022 in every one outside the allocators;
# an einops layer's call moved 0.46% under a shift before the imports, all of it in the type cache's misses and
# the dict lookups they make. Twelve rows of torch ops and pure-Python functions moved 0.08-2.0% in all and
# 0-0.09% outside them, the rest in memcpy, memset and memcmp, whose paths follow alignment (docs/counts.md).
LAYOUT_DRIVEN_FILES = ("/malloc.c", "/arena.c", "/hooks.c", "/obmalloc.c")
LAYOUT_DRIVEN_FUNCTIONS = frozenset({
    "malloc", "free", "calloc", "realloc", "reallocarray", "memalign", "posix_memalign", "aligned_alloc",
    "valloc", "pvalloc", "cfree", "__libc_malloc", "__libc_free", "__libc_calloc", "__libc_realloc",
    "__libc_memalign", "__libc_valloc", "__libc_pvalloc", "__posix_memalign", "_int_malloc", "_int_free",
    "_int_realloc", "_int_memalign", "_mid_memalign", "malloc_consolidate", "unlink_chunk", "sysmalloc",
    "systrim", "tcache_init", "arena_get2", "_int_free_merge_chunk", "_int_free_create_chunk",
    "_int_free_maybe_consolidate", "PyObject_Malloc", "PyObject_Calloc", "PyObject_Realloc", "PyObject_Free",
    "_PyObject_Malloc", "_PyObject_Calloc", "_PyObject_Realloc", "_PyObject_Free", "PyMem_Malloc",
    "PyMem_Calloc", "PyMem_Realloc", "PyMem_Free", "_PyMem_RawMalloc", "_PyMem_RawCalloc", "_PyMem_RawRealloc",
    "_PyMem_RawFree", "PyMem_RawMalloc", "PyMem_RawCalloc", "PyMem_RawRealloc", "PyMem_RawFree",
    "pymalloc_alloc", "pymalloc_free", "pymalloc_realloc", "allocate_from_new_pool", "insert_to_usedpool",
    "insert_to_freepool", "new_arena", "address_in_range",
    "find_name_in_mro", "assign_version_tag"})


def is_layout_driven(file, function):
    """Whether a function of a callgrind dump (its file, "???" or None where unknown) is one whose path follows
    memory addresses (LAYOUT_DRIVEN_FILES, LAYOUT_DRIVEN_FUNCTIONS)."""
    if file and file.endswith(LAYOUT_DRIVEN_FILES):
        return True
    return function.split("'", 1)[0].split(".constprop", 1)[0].split(".isra", 1)[0] in LAYOUT_DRIVEN_FUNCTIONS


def dump_layout_driven(path):
    """The instructions a callgrind out file counts in code whose path follows memory addresses
    (is_layout_driven): each such function's self cost, and the inclusive cost of its calls to other functions
    (realloc's memcpy, when the block moves; the type cache's dict lookups on a miss); a call between two of
    them is counted where it runs.
    The format is callgrind's (name compression, relative positions, inlined files: fi=/fe=)."""
    files, functions = {}, {}

    def named(table, rest):  # "(12) name" defines id 12; "(12)" refers to it; a plain name is itself
        if rest.startswith("("):
            ident, _, name = rest.partition(")")
            name = name.strip()
            if name:
                table[ident] = name
            return table.get(ident, name)
        return rest

    positions, column, total = 1, None, 0
    file = inlined = function = None
    callee_file = callee = None
    counted, call = False, None  # call: after calls=, whether its inclusive cost (the next line) is counted
    with open(path) as f:
        for line in f:
            first = line[:1]
            if first.isdigit() or first in "+-*":
                if call is not None:
                    take, call = call, None
                else:
                    take = counted
                if take and column is not None:
                    fields = line.split()
                    if len(fields) > column:
                        total += int(fields[column])
                continue
            key, eq, rest = line.rstrip("\n").partition("=")
            if not eq:
                if line.startswith("positions:"):
                    positions = len(line.split()) - 1
                elif line.startswith("events:"):
                    column = positions + line.split()[1:].index("Ir")
                continue
            if key == "fl":
                file, inlined = named(files, rest), None
            elif key in ("fi", "fe"):
                inlined = named(files, rest)
            elif key == "fn":
                function, inlined, callee_file = named(functions, rest), None, None
            elif key in ("cfl", "cfi"):
                callee_file = named(files, rest)
                continue
            elif key == "cfn":
                callee = named(functions, rest)
                continue
            elif key == "calls":  # from such code to code of its own choosing (memcpy, a dict lookup): its
                call = counted and not is_layout_driven(callee_file or inlined or file, callee)
                callee_file = None
                continue
            else:
                continue
            counted = function is not None and is_layout_driven(inlined or file, function)
    return total


SWITCH_ENV = "TORCHBENCH_INSTRUMENTATION_SWITCH"  # the library that switches instrumentation on (cpp.py)
LAYOUT_ENV = "TORCHBENCH_COUNTS_LAYOUT"  # a whole number: shift this process's memory layout (see _shift_layout)
JITTER_ENV = "TORCHBENCH_COUNTS_JITTER"  # a whole number: jitter the layout after the imports (see _jitter_layout)
# Text mixed into the jitter's and the layout draws' seeds. The alert leaves it unset: base and head are
# jittered alike, and only their code moves their objects. evaluation/counts_noise_pool.py sets it to the
# commit, so that each commit of its pool draws layouts of its own (independent A/A pairs to calibrate on).
SALT_ENV = "TORCHBENCH_COUNTS_SALT"


def _shift_layout(k):
    """Objects kept alive for the whole process, allocated before torch is imported, so that for k > 0 every
    later object (torch's interned strings, types, the suite's code) lands at other addresses than with k = 0.

    Counts depend on addresses: CPython's method cache and every dict or set keyed by identity hash by
    address, and the allocator's pools fill in another order. A commit that changes code nobody runs moves
    them too (a plain suite's torch rows by up to 1.5%, evaluation/plain_suite_counts.py), which no second
    process of the same commit sees; a process with a shifted layout does (the same rows moved by up to 1.8%
    under k = 1). So the confirming process of each side runs shifted (torchbench.ab.counts)."""
    return [str(i) * 3 for i in range(5003 * k)], bytearray(37 * 5003 * k)


def _jitter_layout(k, salt=""):
    """Objects kept alive for the whole process, allocated after the imports and before the cases, for k > 0:
    a k-drawn number of small objects of k-drawn sizes (every pymalloc size class) and a few blocks of odd
    sizes beyond it (glibc's heap), so that the cases' objects land at other offsets inside pymalloc's pools
    and the heap, as they do after a commit that changes code nobody runs. _shift_layout's whole-pool shift
    keeps those offsets (a dict or set keyed by identity hashes by an address's low bits). A salt (SALT_ENV)
    draws other objects of the same number and sizes' distribution."""
    import random

    draw = random.Random(f"{salt}:{k}" if salt else k)
    return ([bytes(draw.randrange(1, 512)) for _ in range(97 * k + draw.randrange(256))],
            [bytearray(draw.randrange(513, 1 << 17)) for _ in range(1 + k % 5)]) if k else None


def _draw_layout(seed):
    """Objects for one in-process layout draw of a case (collect_callgrind_many(draws=...)): a drawn number
    of small objects of drawn sizes (pymalloc's size classes) and a few odd malloc blocks, allocated before
    the case's objects are made again and kept until the case ends, so that the draw's objects land at other
    offsets in the pools and the heap than the draw before. Fewer than _jitter_layout's (a whole process's
    shift): a draw costs no more than the case's own setup."""
    import random

    draw = random.Random(seed)
    return ([bytes(draw.randrange(1, 512)) for _ in range(draw.randrange(1, 768))],
            [bytearray(draw.randrange(513, 1 << 16)) for _ in range(draw.randrange(1, 4))])


def main():
    import os

    kept = _shift_layout(int(os.environ.get(LAYOUT_ENV) or 0))  # noqa: F841 - alive until the process ends
    manifest = open(sys.argv[1], "a", buffering=1)

    def report(**event):
        manifest.write(json.dumps(event) + "\n")

    try:
        import torch

        toggle = torch._C._valgrind_toggle
        toggle_and_dump = torch._C._valgrind_toggle_and_dump_stats
    except (ImportError, AttributeError) as e:
        report(event="fatal", error=f"torch in {sys.executable} cannot toggle callgrind: {e!r}")
        return 1

    # Everything alive now (torch's modules, mostly) moves to the permanent
    # generation: the gc.collect() before each counted region then scans only
    # what the cases created, instead of ~10^5 objects at ~0.4 s apiece here.
    gc.collect()
    gc.freeze()
    payload = pickle.load(sys.stdin.buffer)
    # The parent's import path, so callables and globals from its modules resolve here.
    sys.path[:0] = [p for p in payload["sys_path"] if p not in sys.path]
    # ... and the modules it imported from elsewhere (an asv suite), found where it found them.
    sys.meta_path[:0] = [_FoundIn(name, folder) for name, folder in payload.get("packages", {}).items()]
    jitter = int(os.environ.get(JITTER_ENV) or 0)
    salt = os.environ.get(SALT_ENV, "")
    jittered = _jitter_layout(jitter, salt)  # noqa: F841 - alive until the end
    dumps = 0
    baselines = {}
    switch = os.environ.get(SWITCH_ENV)

    def instrument():
        """Switch instrumentation on before the first case's warm-up (the process started without it, so that
        its imports ran fast); once on, it stays on (each switch flushes valgrind's code cache). Not later: the
        cache simulation starts empty with it, and a first case warmed up uninstrumented counted its first
        run's misses cold (a 64-entry table walk: 4.3 last-level misses a call in its first draw, none after)."""
        nonlocal switch
        if switch:
            import ctypes

            ctypes.CDLL(switch).torchbench_start_instrumentation()
            switch = None

    fresh = [True]  # the process's first case: one block counted and dropped before its repeats

    def settle(block):
        """The process's first counted block runs with the simulated caches cold where the counting loop's own
        code is concerned (0.45 last-level misses a call left in a table walk's first draw after an
        instrumented warm-up): run one block and drop its dump, once a process."""
        if fresh[0]:
            fresh[0] = False
            block()

    consume = collections.deque(maxlen=0).extend

    def counted(gen, loops):
        """Count one block. Between the two toggles only C code runs (deque,
        map, operator.call, partial, generator.send) besides the statement
        itself: interpreted code here would specialise at some repeat and
        shift that repeat's count."""
        nonlocal dumps
        instrument()
        gc.collect()
        gc.disable()
        try:
            consume(map(operator.call, (toggle, functools.partial(gen.send, loops), toggle_and_dump)))
        except BaseException:
            toggle_and_dump()  # stop counting; this dump is discarded
            raise
        finally:
            dumps += 1
            gc.enable()
        return dumps

    def counted_calls(call, each, number):
        """Count `number` calls of `call`, each after `each` with counting off (asv's setup between timed
        calls). Between a call's two toggles only C code runs besides the call (deque, map, operator.call),
        as in `counted`; the loop around them runs uncounted. The block's dump is one empty toggle pair,
        which the baseline (this loop around an empty function) has too."""
        nonlocal dumps
        instrument()
        gc.collect()
        gc.disable()
        try:
            for _ in range(number):
                each()  # counting is off here: an exception leaves it off
                try:
                    consume(map(operator.call, (toggle, call, toggle)))
                except BaseException:
                    toggle_and_dump()  # the call raised with counting on: stop; this dump is discarded
                    dumps += 1
                    raise
            consume(map(operator.call, (toggle, toggle_and_dump)))
            dumps += 1
        finally:
            gc.enable()
        return dumps

    def prepare(case):
        """A suite's imports (its library's module-level tables too: a held-out library kept 200,000 tuples)
        join the permanent generation, as torch's did: the full collection before each counted run then scans
        only what the cases made (evaluation/counting_speed.py: 126 -> 98 s for a 64-row suite over such a
        table). What a case's setup makes is not frozen: its collection also leaves the simulated caches in
        the same state before every counted run."""
        if case.get("prepare"):
            case["prepare"]()
            gc.collect()
            gc.freeze()

    out_dir = os.path.dirname(os.path.abspath(sys.argv[1]))  # callgrind's dumps: OUT_DIR/callgrind.out.N

    def repeat_until_agreed(index, case, first, count):
        """The case's counted runs, each reported as it is dumped: case["repeats"] of them, or, where the case
        says how close its repeats must agree (case["agree"]), as few as AGREED_REPEATS once that many agree
        within it (the spread of their instruction totals over the smallest), the rest only where they do
        not (a repeat is most of a small row's seconds under valgrind; repeats that agree add nothing)."""
        agree, totals = case.get("agree"), []
        for repeat in range(case["repeats"]):
            dump = count()
            report(event="dump", case=index, repeat=first + repeat, dump=dump)
            if agree is None:
                continue
            path = os.path.join(out_dir, f"callgrind.out.{dump}")
            ir = (dump_totals(path) or {}).get("Ir")
            # the repeats agree outside the layout-driven code (what a count decides on: asv_worker.counts)
            totals.append(None if ir is None else ir - dump_layout_driven(path))
            if len(totals) >= AGREED_REPEATS and None not in totals and (
                    max(totals) - min(totals) <= agree * min(totals)):
                break

    def count_calls(index, case, first, warmup):
        """A CallCase: `warmup` calls (each one after `each`), then its repeats (numbered from `first`), then
        its teardown."""
        call, each = case["call"], case["each"] or _nothing
        prepare(case)
        instrument()  # before the warm-up: the simulated caches start empty when instrumentation starts
        try:
            for _ in range(warmup):
                each()
                call()
            settle(lambda: counted_calls(call, each, case["number"]))
            repeat_until_agreed(index, case, first, lambda: counted_calls(call, each, case["number"]))
        finally:
            if case["teardown"]:
                case["teardown"]()

    def call_baseline(number):
        for _ in range(WARMUP_RUNS):
            _nothing()
        return counted_calls(_nothing, _nothing, number)

    report(event="started", cases=len(payload["cases"]))
    batch, batch_jitter, again = payload["cases"], jitter, []  # (again: each continuation's jitter objects)
    while True:
        for index, blob in batch:
            report(event="case", case=index)
            drawn = []  # the case's layout draws' objects, alive until the case ends
            try:
                case = pickle.loads(blob)  # per case: one that cannot load fails alone
                torch.set_num_threads(case["num_threads"])
                kind = "call" if case.get("call") is not None else "stmt"
                for draw in range(case.get("draws", 1)):
                    if draw:  # another layout: a draw's objects first, then the case's made again after them
                        seed = f"{batch_jitter}:{index}:{draw}"
                        drawn.append(_draw_layout(f"{salt}|{seed}" if salt else seed))
                        case = pickle.loads(blob)
                    first = draw * case["repeats"]
                    warmup = case.get("warmup", WARMUP_RUNS)
                    if draw:
                        warmup = min(warmup, LATER_WARMUP)
                    if kind == "call":
                        count_calls(index, case, first, warmup)
                    else:
                        if case.get("resolve"):  # a statement made here (an asv method's Timer): set up in place
                            prepare(case)
                            case = dict(case, **case["resolve"]())
                            torch.set_num_threads(case["num_threads"])
                        try:
                            gen, loops = _build(case, torch)
                            instrument()  # before the warm-up, as count_calls
                            _warm_up(gen, loops, warmup)
                            settle(lambda: counted(gen, loops))
                            repeat_until_agreed(index, case, first, lambda: counted(gen, loops))
                            gen.close()
                        finally:
                            if case.get("teardown"):
                                case["teardown"]()
            except BaseException:
                report(event="error", case=index, error=traceback.format_exc())
                continue
            if case["baseline"] and (case["number"], kind) not in baselines:
                # The empty loop's cost depends only on `number` and the loop's kind: one per process.
                try:
                    if kind == "call":
                        dump = call_baseline(case["number"])
                    else:
                        gen, loops = _build(
                            dict(case, stmt="pass", setup="", stmt_fn=None, setup_fn=None, scripted={}), torch)
                        _warm_up(gen, loops)
                        dump = counted(gen, loops)
                    baselines[(case["number"], kind)] = dump
                    report(event="baseline", number=case["number"], kind=kind, dump=dump)
                except BaseException:
                    report(event="error", case=index, error=traceback.format_exc())
            report(event="case_done", case=index)
        if not payload.get("more"):
            break
        # more layout draws of cases already counted, in this process (no second start-up): the parent sends
        # them once it knows which (torchbench_core.callgrind.Again), or closes stdin
        report(event="batch_done")
        try:
            payload = pickle.load(sys.stdin.buffer)
        except EOFError:
            break
        again.append(_jitter_layout(payload["jitter"], salt))
        batch, batch_jitter = payload["cases"], payload["jitter"]
        report(event="again", cases=len(batch), jitter=batch_jitter)
    report(event="finished")
    return 0


if __name__ == "__main__":
    import os as _os

    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Without the interpreter's finalization: under valgrind, with instrumentation on, tearing down torch's and
    # the suite's modules took 4.2-4.3 s a process here (a process's last report to its end), every count
    # already reported and flushed (the manifest is line-buffered); 0.1 s so
    _os._exit(code or 0)
