"""Recording the operator inputs a model's training step gives aten, in PyTorch's log format.

:class:`OperatorInputsMode` is a TorchDispatchMode: every aten call under it is
written down as its overload and its inputs' specs (shape, dtype, stride where
not contiguous, scalars, lists, keyword arguments), counted per distinct input.
:func:`record_training` runs one forward and backward of a model under it.
Operators that compute nothing (constructors, ``*_like``, views that alias
their input) are left out of the log, as PyTorch's recorder leaves them out.
"""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from typing import Any, Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

from .log_format import DTYPE_ABBREVIATIONS, DtypeArg, OperatorLog, SparseSpec, TensorSpec, TorchConstant, \
    format_sample

__all__ = ["OperatorInputsMode", "computes", "record_training"]

_TENSOR_TYPE = torch._C.TensorType.get()


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _spec(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        if value.is_sparse:
            return SparseSpec(tuple(value.shape), _dtype_name(value.dtype), str(value.layout).removeprefix("torch."),
                              value.is_coalesced(), value._nnz())
        stride = None if value.is_contiguous() else tuple(value.stride())
        return TensorSpec(tuple(value.shape), _dtype_name(value.dtype), stride)
    if isinstance(value, torch.dtype):
        return DtypeArg(_dtype_name(value))
    if isinstance(value, (torch.layout, torch.memory_format)):
        return TorchConstant(str(value).removeprefix("torch."))
    if isinstance(value, torch.device):
        return value.type
    return value


def _has_tensor(tree: Any) -> bool:
    return any(isinstance(leaf, torch.Tensor) for leaf in tree_flatten(tree)[0])


def _recordable(args: tuple, kwargs: dict) -> bool:
    leaves = tree_flatten((args, kwargs))[0]
    return all(not isinstance(leaf, torch.UntypedStorage) and
               not (isinstance(leaf, torch.dtype) and _dtype_name(leaf) not in DTYPE_ABBREVIATIONS)
               for leaf in leaves)


def _has_tensor_type(type_: torch._C.JitType) -> bool:
    return type_.isSubtypeOf(_TENSOR_TYPE) or any(_has_tensor_type(t) for t in type_.containedTypes())


@functools.lru_cache(maxsize=None)
def computes(operator: torch._ops.OpOverload) -> bool:
    """False for an operator that computes nothing worth timing: a constructor (no tensor argument), a
    ``*_like``, or a view (its outputs alias its inputs: view, t, split...). In-place writes compute."""
    schema = operator._schema
    if not any(_has_tensor_type(arg.type) for arg in schema.arguments) or "_like" in operator.name():
        return False
    if schema.is_mutable:
        return True
    # a view: every output aliases an input (a list of views, as split's, carries the alias on the list)
    return not (schema.returns and all(r.alias_info is not None for r in schema.returns))


class OperatorInputsMode(TorchDispatchMode):
    """Records every aten call made under it: ``calls[overload name][sample text] += 1``."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: dict[str, Counter] = defaultdict(Counter)
        self.overloads: dict[str, torch._ops.OpOverload] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if _has_tensor((args, kwargs)) and _has_tensor(out) and _recordable(args, kwargs):
            name = str(func)
            self.overloads[name] = func
            self.calls[name][format_sample(*tree_map(_spec, (tuple(args), kwargs)))] += 1
        return out

    def log(self, *, compute_only: bool = True) -> OperatorLog:
        return OperatorLog({name: Counter(samples) for name, samples in self.calls.items()
                            if not compute_only or computes(self.overloads[name])})


def _loss(output: Any) -> torch.Tensor:
    """A scalar to call backward on: the output's own ``loss`` where it has one (transformers' models given
    labels), else the sum of its floating tensors' means."""
    loss = getattr(output, "loss", None)
    if isinstance(loss, torch.Tensor):
        return loss
    floats = [t for t in tree_flatten(output if not hasattr(output, "to_tuple") else output.to_tuple())[0]
              if isinstance(t, torch.Tensor) and t.is_floating_point() and t.requires_grad]
    if not floats:
        raise ValueError("the model's output has no floating tensor that requires grad: nothing to train")
    return sum(t.float().mean() for t in floats)


def record_training(model: torch.nn.Module | Callable, inputs: tuple = (), kwargs: dict | None = None, *,
                    backward: bool = True) -> OperatorLog:
    """The aten calls of one training step (forward, loss, backward) of ``model(*inputs, **kwargs)``."""
    mode = OperatorInputsMode()
    with mode:
        output = model(*inputs, **(kwargs or {}))
        if backward:
            _loss(output).backward()
    return mode.log()
