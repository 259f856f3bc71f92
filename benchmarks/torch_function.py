"""Seed 004: the overhead of __torch_function__ dispatch on torch.add.

Tensor is the baseline; SubTensor is a plain subclass (re-wrapping costs);
WithTorchFunction is a Tensor-like with a (deprecated, plain-method)
__torch_function__; SubWithTorchFunction overrides and defers to super().
Changes of ~100 ns matter here, so every sample is kept. The same cases are
counted under valgrind too (TorchFunctionCounts): the Compare page shows each
case's instructions beside its time.
"""

import torch

from torchbench_core.asv_suite import CountsSuite, TimerSpec, TimerSuite


class SubTensor(torch.Tensor):
    pass


class WithTorchFunction:
    def __init__(self, data, requires_grad=False):
        if isinstance(data, torch.Tensor):
            self._tensor = data
            return
        self._tensor = torch.tensor(data, requires_grad=requires_grad)

    # A plain method, as in the seed; torch warns that this is deprecated.
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        return WithTorchFunction(args[0]._tensor + args[1]._tensor)


class SubWithTorchFunction(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        return super().__torch_function__(func, types, args, kwargs)


TYPES = {"Tensor": torch.tensor, "SubTensor": SubTensor, "WithTorchFunction": WithTorchFunction,
         "SubWithTorchFunction": SubWithTorchFunction}


class TorchFunctionOverhead(TimerSuite):
    timers = [TimerSpec("torch.add(t1, t2)", setup="t1, t2 = make([1.0]), make([2.0])", globals={"make": make},
                        label="__torch_function__ overhead", sub_label=name, description="torch.add(t1, t2)")
              for name, make in TYPES.items()]


class TorchFunctionCounts(CountsSuite):
    of = TorchFunctionOverhead
