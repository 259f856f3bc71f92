"""Pointwise ops on inputs from the unary and binary op fuzzers (fixed seeds).

One asv parameter per fuzzed case, so each case has its own history. The
sub_label names the case's shape, as in the seed tutorial's tables.
"""

from torchbench_core.op_fuzzers import BinaryOpFuzzer, UnaryOpFuzzer

from torchbench_core.asv_suite import timer, track

SEED = 0
CASES = [f"case {i}" for i in range(4)]
MIN_RUN_TIME = 0.1
PARAM_NAMES = ["label", "sub_label", "description", "num_threads"]


def measure_case(fuzzer_cls, label, sub_label, description, num_threads):
    index = CASES.index(sub_label)
    tensors, properties, _ = list(fuzzer_cls(seed=SEED).take(index + 1))[index]
    shape = " x ".join(str(s) for s in tensors["x"].shape)
    layout = "" if properties["x"]["is_contiguous"] else " (discontiguous)"
    return track(timer(description, globals=tensors, label=label, sub_label=f"{sub_label}: {shape}{layout}",
                         description=description, num_threads=num_threads), MIN_RUN_TIME)


class BinaryOps:
    params = ([f"binary op fuzzer, seed {SEED}"], CASES, ["x + y", "x * y"], [1])
    param_names = PARAM_NAMES
    unit = "seconds"
    version = "1"
    timeout = 300

    def track_binary(self, *params):
        return measure_case(BinaryOpFuzzer, *params)


class UnaryOps:
    params = ([f"unary op fuzzer, seed {SEED}"], CASES, ["x.abs()", "x.exp()"], [1])
    param_names = PARAM_NAMES
    unit = "seconds"
    version = "1"
    timeout = 300

    def track_unary(self, *params):
        return measure_case(UnaryOpFuzzer, *params)
