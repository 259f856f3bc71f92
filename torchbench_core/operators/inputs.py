"""Tensors built from an operator-input log's specs, on a device and dtype.

Values are random (seeded per sample, so two runs build the same inputs) except
where an operator reads an input as indices: embedding ids, gather and scatter
indices, loss targets and pooling indices are drawn inside the range their
operator accepts, so that the sample runs instead of failing on an
out-of-range id. A sample that cannot be built raises :class:`SampleSkipped`
with the reason, which the benchmark counts.
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable

import torch
from torch.utils._pytree import tree_map

from .log_format import DtypeArg, SparseSpec, TensorSpec, TorchConstant, parse_sample

__all__ = ["SampleSkipped", "build_sample", "resolve_operator"]


class SampleSkipped(Exception):
    """A sample this tool cannot build: skipped, and counted in the report. The message is "<why>: <detail>",
    the report counting samples by <why>."""


def resolve_operator(name: str) -> torch._ops.OpOverload:
    """``aten.add.Tensor`` -> torch.ops.aten.add.Tensor; KeyError naming the part this torch lacks."""
    namespace, _, rest = name.partition(".")
    packet_name, _, overload = rest.partition(".")
    try:
        packet = getattr(getattr(torch.ops, namespace), packet_name)
        return getattr(packet, overload or "default")
    except (AttributeError, RuntimeError):
        raise KeyError(f"{name} is not an operator of torch {torch.__version__}") from None


def _seed(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little") >> 1


def _storage_size(size: tuple[int, ...], stride: tuple[int, ...]) -> int:
    if any(s == 0 for s in size):
        return 0
    return 1 + sum((s - 1) * st for s, st in zip(size, stride))


def _random(numel: int, dtype: torch.dtype, generator: torch.Generator, high: int | None = None) -> torch.Tensor:
    if high is not None and not dtype.is_floating_point and not dtype.is_complex and dtype != torch.bool:
        return torch.randint(0, max(high, 1), (numel,), generator=generator, dtype=dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, (numel,), generator=generator).bool()
    if dtype.is_floating_point or dtype.is_complex:
        # float16/bfloat16 drawn in float32 (not every CPU kernel draws them) and cast
        draw = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
        return torch.randn(numel, generator=generator, dtype=draw).to(dtype)
    return torch.randint(0, 10, (numel,), generator=generator, dtype=dtype)


def _tensor(spec: TensorSpec, dtype: torch.dtype, generator: torch.Generator, device: torch.device,
            high: int | None = None) -> torch.Tensor:
    stride = spec.stride if spec.stride is not None else torch.empty(spec.size, device="meta").stride()
    flat = _random(_storage_size(spec.size, stride), dtype, generator, high).to(device)
    return flat.as_strided(spec.size, stride)


def _dtype(name: str) -> torch.dtype:
    return getattr(torch, name)


# Operators that read an input as indices: op packet name -> (args, kwargs) -> {argument position: exclusive
# upper bound}. The bounds are what the operator accepts; anything else is drawn at random.
def _dim_size(args: tuple, tensor_at: int, dim_at: int) -> int:
    spec = args[tensor_at]
    return spec.size[args[dim_at] % len(spec.size)] if spec.size else 1


def _classes(spec: TensorSpec) -> int:
    return spec.size[1] if len(spec.size) >= 2 else (spec.size[0] if spec.size else 1)


_INDEX_BOUNDS: dict[str, Callable[[tuple], dict[int, int]]] = {
    "embedding": lambda a: {1: a[0].size[0]},
    "embedding_dense_backward": lambda a: {1: a[2]},
    "embedding_backward": lambda a: {1: a[2]},
    "gather": lambda a: {2: _dim_size(a, 0, 1)},
    "scatter": lambda a: {2: _dim_size(a, 0, 1)},
    "scatter_": lambda a: {2: _dim_size(a, 0, 1)},
    "scatter_add": lambda a: {2: _dim_size(a, 0, 1)},
    "scatter_add_": lambda a: {2: _dim_size(a, 0, 1)},
    "scatter_reduce": lambda a: {2: _dim_size(a, 0, 1)},
    "index_select": lambda a: {2: _dim_size(a, 0, 1)},
    "index_add": lambda a: {2: _dim_size(a, 0, 1)},
    "index_copy": lambda a: {2: _dim_size(a, 0, 1)},
    "nll_loss_forward": lambda a: {1: _classes(a[0])},
    "nll_loss2d_forward": lambda a: {1: _classes(a[0])},
    "nll_loss_backward": lambda a: {2: _classes(a[1])},
    "nll_loss2d_backward": lambda a: {2: _classes(a[1])},
}
# indices given as a list of tensors, one per leading dimension of the first argument
_INDEX_LISTS = {"index", "index_put", "index_put_", "_index_put_impl_", "_unsafe_index", "_unsafe_index_put"}


def _pooling_indices(packet: str, args: list) -> None:
    """max_pool2d_with_indices_backward(grad, self, kernel, stride, padding, dilation, ceil_mode, indices):
    indices are only valid as the forward's own, so they are made by running it."""
    if packet == "max_pool2d_with_indices_backward" and isinstance(args[-1], torch.Tensor):
        args[-1] = torch.ops.aten.max_pool2d_with_indices(*args[1:7])[1]


def build_sample(operator: str, text: str, *, dtype: torch.dtype | None = None, device: str | torch.device = "cpu",
                 channels_last: bool = False) -> tuple[list, dict]:
    """(args, kwargs) for one logged sample of ``operator`` (``aten.add.Tensor``).

    dtype: floating tensors (and floating dtype arguments) are cast to it; None keeps the log's dtypes.
    channels_last: 4-d tensors in channels-last memory format. Raises SampleSkipped with the reason for a
    sample this tool cannot build, ValueError for text that is not in the format.
    """
    args, kwargs = parse_sample(text)
    device = torch.device(device)
    packet = operator.split(".")[1] if operator.count(".") >= 1 else operator
    generator = torch.Generator().manual_seed(_seed(operator + text))
    bounds = _INDEX_BOUNDS[packet](args) if packet in _INDEX_BOUNDS else {}

    def target(spec_dtype: str) -> torch.dtype:
        own = _dtype(spec_dtype)
        return dtype if dtype is not None and own.is_floating_point else own

    def leaf(value: Any, high: int | None = None) -> Any:
        if isinstance(value, SparseSpec):
            raise SampleSkipped(f"a sparse input, only dense ones are built: {value!r}")
        if isinstance(value, TensorSpec):
            made = _tensor(value, target(value.dtype), generator, device, high)
            if channels_last and made.dim() == 4:
                made = made.contiguous(memory_format=torch.channels_last)
            return made
        if isinstance(value, DtypeArg):
            return target(value.name)
        if isinstance(value, TorchConstant):
            if not hasattr(torch, value.name):
                raise SampleSkipped(f"a constant this torch lacks: torch.{value.name} (torch {torch.__version__})")
            return getattr(torch, value.name)
        if value in ("cpu", "cuda"):
            return device.type
        return value

    built = []
    for position, value in enumerate(args):
        if packet in _INDEX_LISTS and position == 1 and isinstance(value, list):
            first = args[0]
            built.append([leaf(v, first.size[i] if isinstance(v, TensorSpec) and v.dtype != "bool" else None)
                          for i, v in enumerate(value)])
        else:
            built.append(tree_map(lambda v, h=bounds.get(position): leaf(v, h), value))
    built_kwargs = {k: tree_map(leaf, v) for k, v in kwargs.items()}
    _pooling_indices(packet, built)
    return built, built_kwargs
