"""Tensors built from an operator-input log's specs, on a device and dtype.

Values are random (seeded per sample, so two runs build the same inputs) except
where an operator reads an input as indices: embedding ids, gather and scatter
indices, loss targets and pooling indices are drawn inside the range their
operator accepts, and embedding bags' offsets start at 0 and never decrease,
so that the sample runs instead of failing on an out-of-range id. On the
``meta`` device only index tensors get values (shapes and index rules, checked
without the memory). A sample that cannot be built raises :class:`SampleSkipped`
with the reason, which the benchmark counts.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any, Callable

import torch
from torch.utils._pytree import tree_map

from .log_format import DtypeArg, SparseSpec, TensorSpec, TorchConstant, parse_sample

__all__ = ["INDEX_LIKE", "SampleSkipped", "build_sample", "resolve_operator"]


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


def _stride(spec: TensorSpec) -> tuple[int, ...]:
    return spec.stride if spec.stride is not None else torch.empty(spec.size, device="meta").stride()


def _tensor(spec: TensorSpec, dtype: torch.dtype, generator: torch.Generator, device: torch.device,
            high: int | None = None) -> torch.Tensor:
    stride = _stride(spec)
    if device.type == "meta" and high is None:  # shapes only: no values to draw
        return torch.empty_strided(spec.size, stride, dtype=dtype, device=device)
    flat = _random(_storage_size(spec.size, stride), dtype, generator, high).to(device)
    return flat.as_strided(spec.size, stride)


def _laid_out(spec: TensorSpec, values: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``values`` (contiguous, of spec's size and dtype) in spec's strides (a logged expanded stride keeps
    the first value along the expanded dimension)."""
    stride = _stride(spec)
    flat = torch.zeros(_storage_size(spec.size, stride), dtype=_dtype(spec.dtype))
    flat.as_strided(spec.size, stride).copy_(values.to(flat.dtype))
    return flat.to(device).as_strided(spec.size, stride)


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
    "index_add_": lambda a: {2: _dim_size(a, 0, 1)},
    "index_fill": lambda a: {2: _dim_size(a, 0, 1)},
    "index_fill_": lambda a: {2: _dim_size(a, 0, 1)},
    "index_copy_": lambda a: {2: _dim_size(a, 0, 1)},
    "index_reduce": lambda a: {2: _dim_size(a, 0, 1)},
    "index_reduce_": lambda a: {2: _dim_size(a, 0, 1)},
    "scatter_reduce_": lambda a: {2: _dim_size(a, 0, 1)},
    "take": lambda a: {1: math.prod(a[0].size)},
    "index_copy": lambda a: {2: _dim_size(a, 0, 1)},
    "nll_loss_forward": lambda a: {1: _classes(a[0])},
    "nll_loss2d_forward": lambda a: {1: _classes(a[0])},
    "nll_loss_backward": lambda a: {2: _classes(a[1])},
    "nll_loss2d_backward": lambda a: {2: _classes(a[1])},
    # embedding bags: ids below the table's rows (their offsets and bags are _bags' work)
    "_embedding_bag": lambda a: {1: a[0].size[0]},
    "_embedding_bag_forward_only": lambda a: {1: a[0].size[0]},
    "embedding_bag": lambda a: {1: a[0].size[0]},
    "_embedding_bag_per_sample_weights_backward": lambda a: {2: a[1].size[0]},
    "_embedding_bag_backward": lambda a: {1: a[6], 5: a[6]},
    "_embedding_bag_dense_backward": lambda a: {1: a[5], 4: a[5]},
}
# indices given as a list of tensors, one per leading dimension of the first argument
_INDEX_LISTS = {"index", "index_put", "index_put_", "_index_put_impl_", "_unsafe_index", "_unsafe_index_put"}


# Embedding bags: op packet -> argument positions of (indices, offsets, offset2bag, bag_size, bags), where
# bags is the position of a tensor whose first dimension counts the bags when there are no offsets.
_BAGS: dict[str, tuple[int, int | None, int | None, int | None, int | None]] = {
    "_embedding_bag": (1, 2, None, None, None),
    "_embedding_bag_forward_only": (1, 2, None, None, None),
    "embedding_bag": (1, 2, None, None, None),
    "_embedding_bag_per_sample_weights_backward": (2, 3, 4, None, None),
    "_embedding_bag_backward": (1, 2, 3, 4, None),
    "_embedding_bag_dense_backward": (1, None, 2, 3, 0),
}


def _offsets(count: int, indices: int, include_last: bool, generator: torch.Generator) -> torch.Tensor:
    """``count`` bag starts over ``indices`` ids: 0 first, never decreasing, none past the end (the last one
    the end itself where the operator reads it as the last bag's end)."""
    if count == 0:
        return torch.zeros(0, dtype=torch.int64)
    cuts = torch.randint(0, indices + 1, (count,), generator=generator).sort().values
    cuts[0] = 0
    if include_last:
        cuts[-1] = indices
    return cuts


def _bags(packet: str, specs: tuple, built: list, generator: torch.Generator, device: torch.device) -> None:
    """Offsets, offset2bag (each id's bag) and bag sizes that agree with each other and with the ids."""
    if packet not in _BAGS or not isinstance(specs[_BAGS[packet][0]], TensorSpec):
        return
    at_indices, at_offsets, at_bag_of, at_sizes, at_count = _BAGS[packet]
    ids = specs[at_indices].size[0] if specs[at_indices].size else 1
    include_last = packet in ("_embedding_bag", "_embedding_bag_forward_only", "embedding_bag") \
        and len(specs) > 7 and bool(specs[7])
    if at_offsets is not None and isinstance(specs[at_offsets], TensorSpec):
        spec = specs[at_offsets]
        starts = _offsets(spec.size[0] if spec.size else 1, ids, include_last, generator)
        built[at_offsets] = _laid_out(spec, starts.reshape(spec.size), device)
        bags = starts[:-1] if include_last else starts
    else:  # no offsets: the bags' starts over the ids, one bag per row of `at_count`
        bags = _offsets(specs[at_count].size[0], ids, False, generator)
    bag_of = (torch.bucketize(torch.arange(ids), bags, right=True) - 1).clamp(min=0)
    for at, values in ((at_bag_of, bag_of), (at_sizes, torch.bincount(bag_of, minlength=len(bags)))):
        if at is not None and isinstance(specs[at], TensorSpec) and math.prod(specs[at].size) == values.numel():
            built[at] = _laid_out(specs[at], values.reshape(specs[at].size), device)


def _sparse_indices(packet: str, specs: tuple, built: list, generator: torch.Generator,
                    device: torch.device) -> None:
    """_sparse_coo_tensor_with_dims_and_tensors(sparse_dim, dense_dim, size, indices, values): row i of the
    indices below size[i]."""
    if packet == "_sparse_coo_tensor_with_dims_and_tensors" and isinstance(specs[3], TensorSpec):
        spec, size = specs[3], specs[2]
        rows = [torch.randint(0, max(size[i], 1), spec.size[1:], generator=generator) for i in range(spec.size[0])]
        built[3] = _laid_out(spec, torch.stack(rows) if rows else torch.zeros(spec.size), device)


def _pooling_indices(packet: str, args: list) -> None:
    """max_pool2d_with_indices_backward(grad, self, kernel, stride, padding, dilation, ceil_mode, indices):
    indices are only valid as the forward's own, so they are made by running it."""
    if packet == "max_pool2d_with_indices_backward" and isinstance(args[-1], torch.Tensor):
        args[-1] = torch.ops.aten.max_pool2d_with_indices(*args[1:7])[1]


# Every operator whose inputs include indices of some kind (the index-like samples a test runs eagerly).
INDEX_LIKE = frozenset(_INDEX_BOUNDS) | _INDEX_LISTS | frozenset(_BAGS) | {
    "max_pool2d_with_indices_backward", "_sparse_coo_tensor_with_dims_and_tensors"}


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
    _bags(packet, args, built, generator, device)
    _sparse_indices(packet, args, built, generator, device)
    _pooling_indices(packet, built)
    return built, built_kwargs
