"""A subset of the standard instruction-count definitions as asv track_ counts.

setup_cache runs once per commit and environment: one valgrind process
counts every case, so the suite pays valgrind's start-up (~45 s here) once,
not once per case. Each track_ call then returns its case's counts per run
(5 repeats of 100 runs, baseline subtracted) as asv samples.
"""

from torchbench_core.callgrind import CallgrindError, collect_callgrind_many
from torchbench_core.definitions.standard import BENCHMARKS
from torchbench_core.grouped import materialize
from torchbench_core.runner import WorkOrder

NUMBER, REPEATS = 100, 5
setup_cache_timeout = 1800

OPS = ["Pointwise / Math / add / Case: 0", "Pointwise / Math / add / Case: 5", "Pointwise / Math / multiply / Case: 4",
       "Pointwise / Data movement / clone", "Reduction / sum", "Indexing / Tensor-Scalar / Case: 0",
       "Metadata and views / view", "Metadata and views / transpose"]
MODULES = ["Linear", "Conv2d", "ReLU"]
MODULE_VARIANTS = ["Eager Forward", "TorchScript Forward"]


def _selected():
    """{(sub_label, description): WorkOrder} for the cases above."""
    chosen = {}
    for case in materialize(BENCHMARKS):
        order = WorkOrder(*case)
        meta = order.task_metadata()
        name = " / ".join(order.label)
        if order.timer_args.num_threads != 1 or order.timer_args.language != "python":
            continue
        if name in OPS:
            chosen[(name, "explicit")] = order
        elif order.label[0] == "nn Modules" and meta["sub_label"] in MODULES and meta["description"] in MODULE_VARIANTS:
            chosen[(meta["sub_label"], meta["description"])] = order
    return chosen


def setup_cache():
    selected = _selected()
    keys = list(selected)
    results = collect_callgrind_many([selected[k].timer() for k in keys], NUMBER, REPEATS, on_error="return")
    cache = {}
    for key, outcome in zip(keys, results):
        if isinstance(outcome, CallgrindError):
            cache[key] = str(outcome)
        else:
            cache[key] = [s.counts(subtract_baseline=True) / NUMBER for s in outcome]
    return cache


def _track(cache, sub_label, description):
    counts = cache[(sub_label, description)]
    if isinstance(counts, str):
        raise RuntimeError(counts)  # this case failed under valgrind; the others stand
    return {"samples": counts, "number": NUMBER}


class OpInstructions:
    params = (["instruction counts"], OPS, ["explicit"], [1])
    param_names = ["label", "sub_label", "description", "num_threads"]
    unit = "instructions"
    version = "1"

    def track_instructions(self, cache, label, sub_label, description, num_threads):
        return _track(cache, sub_label, description)


class ModuleInstructions:
    params = (["instruction counts: nn Modules"], MODULES, MODULE_VARIANTS, [1])
    param_names = ["label", "sub_label", "description", "num_threads"]
    unit = "instructions"
    version = "1"

    def track_instructions(self, cache, label, sub_label, description, num_threads):
        return _track(cache, sub_label, description)
