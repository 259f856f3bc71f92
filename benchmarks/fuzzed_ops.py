"""Pointwise ops on inputs from the unary and binary op fuzzers (fixed seeds).

One asv parameter per fuzzed case, so each case has its own history. The
sub_label names the case's shape, as in the seed tutorial's tables.
"""

from torchbench_core.op_fuzzers import BinaryOpFuzzer, UnaryOpFuzzer

from ._harness import measure, timer

SEED = 0
CASES = 4
MIN_RUN_TIME = 0.1


def _case(fuzzer, index):
    tensors, properties, params = list(fuzzer.take(index + 1))[index]
    shape = " x ".join(str(s) for s in tensors["x"].shape)
    layout = "" if properties["x"]["is_contiguous"] else " (discontiguous)"
    return tensors, f"case {index}: {shape}{layout}"


class BinaryOps:
    params = (["binary op fuzzer, seed 0"], [f"case {i}" for i in range(CASES)], ["x + y", "x * y"], [1])
    param_names = ["label", "sub_label", "description", "num_threads"]
    unit = "seconds"
    version = "1"
    timeout = 300

    def track_binary(self, label, sub_label, description, num_threads):
        tensors, name = _case(BinaryOpFuzzer(seed=SEED), int(sub_label.split()[1]))
        return measure(timer(description, globals=tensors, label=label, sub_label=name,
                             description=description, num_threads=num_threads), MIN_RUN_TIME)


class UnaryOps:
    params = (["unary op fuzzer, seed 0"], [f"case {i}" for i in range(CASES)], ["x.abs()", "x.exp()"], [1])
    param_names = ["label", "sub_label", "description", "num_threads"]
    unit = "seconds"
    version = "1"
    timeout = 300

    def track_unary(self, label, sub_label, description, num_threads):
        tensors, name = _case(UnaryOpFuzzer(seed=SEED), int(sub_label.split()[1]))
        return measure(timer(description, globals=tensors, label=label, sub_label=name,
                             description=description, num_threads=num_threads), MIN_RUN_TIME)
