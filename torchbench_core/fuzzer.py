"""Reproducible random benchmark inputs: parameters first, then tensors built from them.

Sampling follows torch.utils.benchmark draw for draw (numpy RandomState for
parameters, one torch seed per take), so a seed yields the same cases as a
working torch fuzzer. Differences, each deliberate:
  * normalised dict distributions are accepted (torch 2.13 inverted the check
    and rejects them, which breaks every op fuzzer);
  * take() draws tensors from a private torch.Generator instead of reseeding
    torch's global RNG under the caller;
  * bad specs raise ValueError naming the parameter, tensor or constraint.
"""

from __future__ import annotations

import collections
import functools
import itertools
import math
from typing import Any, Callable, Iterator

import numpy as np

_DISTRIBUTIONS = ("loguniform", "uniform")
_MAX_ATTEMPTS = 1000


class ParameterAlias:
    """A dict-distribution choice that takes another parameter's value.

    Example: FuzzedParameter("y_len", distribution={1: 0.5, ParameterAlias("x_len"): 0.5})
    """

    def __init__(self, alias_to: str) -> None:
        self.alias_to = alias_to

    def __repr__(self) -> str:
        return f"ParameterAlias[alias_to: {self.alias_to}]"


class FuzzedParameter:
    """A named scalar drawn from "uniform", "loguniform" or a {value: probability} dict.

    strict=True samples once per generation and keeps the value across
    rejection retries, so rejection does not skew its distribution.
    """

    def __init__(
        self,
        name: str,
        minval: int | float | None = None,
        maxval: int | float | None = None,
        distribution: str | dict[Any, float] | None = None,
        strict: bool = False,
    ) -> None:
        self._name = name
        self._minval = minval
        self._maxval = maxval
        self._distribution = self._check_distribution(distribution)
        self.strict = strict

    @property
    def name(self) -> str:
        return self._name

    def _check_distribution(self, distribution: Any) -> Any:
        where = f"FuzzedParameter {self._name!r}"
        if isinstance(distribution, dict):
            if not distribution:
                raise ValueError(f"{where}: the distribution dict is empty")
            probabilities = list(distribution.values())
            if any(not isinstance(p, (int, float)) or p < 0 for p in probabilities):
                raise ValueError(f"{where}: probabilities must be non-negative numbers, got {probabilities}")
            if abs(sum(probabilities) - 1) > 1e-5:
                raise ValueError(f"{where}: distribution is not normalized (probabilities sum to {sum(probabilities)})")
            if self._minval is not None or self._maxval is not None:
                raise ValueError(f"{where}: minval and maxval must be None with a dict distribution")
            return distribution
        if distribution not in _DISTRIBUTIONS:
            raise ValueError(
                f"{where}: unknown distribution {distribution!r}; expected 'uniform', "
                "'loguniform' or a {value: probability} dict"
            )
        if self._minval is None or self._maxval is None:
            raise ValueError(f"{where}: {distribution!r} needs both minval and maxval")
        if self._minval > self._maxval:
            raise ValueError(f"{where}: minval {self._minval} > maxval {self._maxval}")
        if distribution == "loguniform" and self._minval <= 0:
            raise ValueError(f"{where}: loguniform needs minval > 0, got {self._minval}")
        return distribution

    def sample(self, state: np.random.RandomState) -> Any:
        if self._distribution == "loguniform":
            value = int(2 ** state.uniform(low=np.log2(self._minval), high=np.log2(self._maxval)))
            return min(max(value, self._minval), self._maxval)
        if self._distribution == "uniform":
            if isinstance(self._minval, int) and isinstance(self._maxval, int):
                return int(state.randint(low=self._minval, high=self._maxval + 1))
            return state.uniform(low=self._minval, high=self._maxval)
        # Choose by index: numpy would otherwise coerce keys (aliases, mixed types).
        keys = list(self._distribution)
        index = state.choice(np.arange(len(keys)), p=tuple(self._distribution.values()))
        return keys[index]


def dtype_size(dtype: Any) -> int:
    import torch

    if dtype == torch.bool:
        return 1
    if dtype.is_floating_point or dtype.is_complex:
        return torch.finfo(dtype).bits // 8
    return torch.iinfo(dtype).bits // 8


def prod(values: Any, base: int = 1) -> int:
    """Product in Python ints: numpy int64 can overflow to a negative that passes size checks."""
    return functools.reduce(lambda x, y: int(x) * int(y), values, base)


class FuzzedTensor:
    """A tensor spec whose sizes and steps may name FuzzedParameters."""

    def __init__(
        self,
        name: str,
        size: tuple[str | int, ...],
        steps: tuple[str | int, ...] | None = None,
        probability_contiguous: float = 0.5,
        min_elements: int | None = None,
        max_elements: int | None = None,
        max_allocation_bytes: int | None = None,
        dim_parameter: str | None = None,
        roll_parameter: str | None = None,
        dtype: Any = None,
        device: Any = None,
        tensor_constructor: Callable[..., Any] | None = None,
        cuda: bool = False,
    ) -> None:
        # roll_parameter: accepted, and unused, as in torch 2.13 (its FuzzedTensor stores nothing for it)
        import torch

        if not 0 <= probability_contiguous <= 1:
            raise ValueError(f"FuzzedTensor {name!r}: probability_contiguous must be in [0, 1]")
        if steps is not None and len(steps) != len(size):
            raise ValueError(f"FuzzedTensor {name!r}: steps {steps} and size {size} differ in length")
        self._name = name
        self._size = tuple(size)
        self._steps = tuple(steps) if steps is not None else None
        self._probability_contiguous = probability_contiguous
        self._min_elements = min_elements
        self._max_elements = max_elements
        self._max_allocation_bytes = max_allocation_bytes
        self._dim_parameter = dim_parameter
        self._dtype = torch.float32 if dtype is None else dtype
        # `cuda=True` is torch's spelling; `device` is the general one.
        self._device = torch.device(device if device is not None else ("cuda" if cuda else "cpu"))
        self._tensor_constructor = tensor_constructor

    @property
    def name(self) -> str:
        return self._name

    def referenced_parameters(self) -> set[str]:
        names = {v for v in (*self._size, *(self._steps or ())) if isinstance(v, str)}
        return names | ({self._dim_parameter} if self._dim_parameter else set())

    def _get_size_and_steps(self, params: dict[str, Any]) -> tuple[tuple[int, ...], ...]:
        dim = params[self._dim_parameter] if self._dim_parameter is not None else len(self._size)

        def resolve(values: tuple[Any, ...]) -> tuple[int, ...]:
            resolved = tuple(params.get(v, v) for v in values)[:dim]
            return resolved + (1,) * (dim - len(resolved))

        size, steps = resolve(self._size), resolve(self._steps or ())
        return size, steps, tuple(s * t for s, t in zip(size, steps))

    def rejection_reason(self, params: dict[str, Any]) -> str | None:
        """Why these parameters do not fit this tensor, or None if they do."""
        size, _, allocation = self._get_size_and_steps(params)
        numel = prod(size)
        if self._max_elements is not None and numel > self._max_elements:
            return f"tensor {self._name!r}: more than max_elements={self._max_elements}"
        if self._min_elements is not None and numel < self._min_elements:
            return f"tensor {self._name!r}: fewer than min_elements={self._min_elements}"
        if self._max_allocation_bytes is not None:
            if prod(allocation, base=dtype_size(self._dtype)) > self._max_allocation_bytes:
                return f"tensor {self._name!r}: more than max_allocation_bytes={self._max_allocation_bytes}"
        return None

    def satisfies_constraints(self, params: dict[str, Any]) -> bool:
        return self.rejection_reason(params) is None

    def _default_constructor(self, size: tuple[int, ...], generator: Any) -> Any:
        import torch

        if self._dtype.is_floating_point or self._dtype.is_complex:
            return torch.rand(size=size, dtype=self._dtype, device="cpu", generator=generator)
        return torch.randint(1, 127, size=size, dtype=self._dtype, device="cpu", generator=generator)

    def _construct(self, allocation: tuple[int, ...], params: dict[str, Any], generator: Any) -> Any:
        import torch

        if self._tensor_constructor is None:
            return self._default_constructor(allocation, generator)
        # A user constructor draws from the global RNG: hand it our stream
        # for the call, then take the advanced stream back and restore the
        # caller's global state.
        with torch.random.fork_rng(devices=[]):
            torch.set_rng_state(generator.get_state())
            tensor = self._tensor_constructor(size=allocation, dtype=self._dtype, **params)
            generator.set_state(torch.get_rng_state())
        return tensor

    def _make_tensor(
        self, params: dict[str, Any], state: np.random.RandomState, generator: Any
    ) -> tuple[Any, dict[str, Any]]:
        size, steps, allocation = self._get_size_and_steps(params)
        raw = self._construct(allocation, params, generator)
        if raw.device != self._device:
            raw = raw.to(self._device)
        dim = len(size)
        order = np.arange(dim)
        if state.rand() > self._probability_contiguous:
            # Same memory, different layout: permute, make contiguous, permute back.
            while dim > 1 and np.all(order == np.arange(dim)):
                order = state.permutation(raw.dim())
            raw = raw.permute(tuple(order)).contiguous().permute(tuple(np.argsort(order)))
        tensor = raw[tuple(slice(0, n * step, step) for n, step in zip(size, steps))]
        properties = {
            "numel": int(tensor.numel()),
            "order": order,
            "steps": steps,
            "is_contiguous": tensor.is_contiguous(),
            "dtype": str(self._dtype),
        }
        return tensor, properties


class FuzzedSparseTensor(FuzzedTensor):
    """A sparse COO tensor spec, as torch's: ``density``, ``coalesced`` and ``sparse_dim`` name parameters
    (torch reads the parameters called 'density' and 'coalesced' whatever names are given; these read the
    names given, the same when they are those)."""

    def __init__(
        self,
        name: str,
        size: tuple[str | int, ...],
        min_elements: int | None = None,
        max_elements: int | None = None,
        dim_parameter: str | None = None,
        sparse_dim: str | None = None,
        nnz: str | None = None,
        density: str | None = None,
        coalesced: str | None = None,
        dtype: Any = None,
        cuda: bool = False,
    ) -> None:
        super().__init__(name=name, size=size, min_elements=min_elements, max_elements=max_elements,
                         dim_parameter=dim_parameter, dtype=dtype, cuda=cuda)
        self._sparse_dim, self._nnz = sparse_dim, nnz
        self._density, self._coalesced = density or "density", coalesced or "coalesced"

    def referenced_parameters(self) -> set[str]:
        return super().referenced_parameters() | {self._density, self._coalesced} | (
            {self._sparse_dim} if self._sparse_dim else set())

    @staticmethod
    def sparse_tensor_constructor(size: Any, dtype: Any, sparse_dim: int, nnz: int, is_coalesced: bool,
                                  generator: Any = None) -> Any:
        """torch's construction, draw for draw: values, then indices, scaled into each sparse dimension;
        uncoalesced, every index twice (the same nnz coordinates, twice the values)."""
        import torch

        if isinstance(size, (int, float)):
            size = [size] * sparse_dim
        if all(size[d] <= 0 for d in range(sparse_dim)) and nnz != 0:
            raise ValueError(f"FuzzedSparseTensor: no room for {nnz} values in size {tuple(size)}")
        values_size = [nnz, *size[sparse_dim:]]
        if dtype.is_floating_point:
            values = torch.rand(size=values_size, dtype=dtype, device="cpu", generator=generator)
        else:
            values = torch.randint(1, 127, size=values_size, dtype=dtype, device="cpu", generator=generator)
        indices = torch.rand(sparse_dim, nnz, device="cpu", generator=generator)
        indices = indices.mul_(torch.tensor(size[:sparse_dim]).unsqueeze(1).to(indices)).to(torch.long)
        if not is_coalesced:
            values = torch.cat([values, torch.randn(values.shape, dtype=values.dtype, generator=generator)], 0)
            indices = torch.cat([indices, indices], 1)
        tensor = torch.sparse_coo_tensor(indices, values, torch.Size(size))
        return tensor.coalesce() if is_coalesced else tensor

    def _make_tensor(
        self, params: dict[str, Any], state: np.random.RandomState, generator: Any
    ) -> tuple[Any, dict[str, Any]]:
        size, _, _ = self._get_size_and_steps(params)
        density = params[self._density]
        nnz = math.ceil(sum(size) * density)
        if nnz > sum(size):
            raise ValueError(f"FuzzedSparseTensor {self._name!r}: density {density} gives more values than "
                             f"the sum of the sizes {size}")
        is_coalesced = params[self._coalesced]
        sparse_dim = min(params[self._sparse_dim] if self._sparse_dim else len(size), len(size))
        tensor = self.sparse_tensor_constructor(size, self._dtype, sparse_dim, nnz, is_coalesced, generator)
        if tensor.device != self._device:
            tensor = tensor.to(self._device)
        properties = {
            "numel": int(tensor.numel()),
            "shape": tensor.size(),
            "is_coalesced": tensor.is_coalesced(),
            "density": density,
            "sparsity": 1.0 - density,
            "sparse_dim": tensor.sparse_dim(),
            "dense_dim": tensor.dense_dim(),
            "is_hybrid": len(size[tensor.sparse_dim():]) > 0,
            "dtype": str(self._dtype),
        }
        return tensor, properties


Constraint = Callable[[dict[str, Any]], bool]


class Fuzzer:
    """Generates (tensors, tensor_properties, params) triples, reproducibly for a seed."""

    def __init__(
        self,
        parameters: list[FuzzedParameter | list[FuzzedParameter]],
        tensors: list[FuzzedTensor | list[FuzzedTensor]],
        constraints: list[Constraint] | None = None,
        seed: int | None = None,
    ) -> None:
        if seed is None:
            seed = int(np.random.RandomState().randint(0, 2**32 - 1, dtype=np.int64))
        self._seed = seed
        self._parameters = self._unpack(parameters, FuzzedParameter, "parameters")
        self._tensors = self._unpack(tensors, FuzzedTensor, "tensors")
        self._constraints = tuple(constraints or ())
        for i, c in enumerate(self._constraints):
            if not callable(c):
                raise ValueError(f"constraint #{i} is not callable: {c!r}")

        p_names = [p.name for p in self._parameters]
        duplicates = [n for n, k in collections.Counter(p_names).items() if k > 1]
        if duplicates:
            raise ValueError(f"Duplicate parameter names: {duplicates}")
        overlap = set(p_names) & {t.name for t in self._tensors}
        if overlap:
            raise ValueError(f"Duplicate names in parameters and tensors: {sorted(overlap)}")
        self._check_aliases()
        self._rejections = 0
        self._total_generated = 0
        self._rejection_reasons: collections.Counter[str] = collections.Counter()

    @staticmethod
    def _unpack(values: Any, cls: type, what: str) -> tuple[Any, ...]:
        flat = tuple(itertools.chain.from_iterable([v] if isinstance(v, cls) else v for v in values))
        for v in flat:
            if not isinstance(v, cls):
                raise ValueError(f"{what} must hold {cls.__name__} objects, got {v!r}")
        return flat

    def _check_aliases(self) -> None:
        """Reject aliases to unknown parameters and alias cycles up front."""
        names = {p.name for p in self._parameters}
        edges: dict[str, set[str]] = {}
        for p in self._parameters:
            if isinstance(p._distribution, dict):
                targets = {k.alias_to for k in p._distribution if isinstance(k, ParameterAlias)}
                unknown = targets - names
                if unknown:
                    raise ValueError(f"FuzzedParameter {p.name!r} aliases unknown parameter(s) {sorted(unknown)}")
                edges[p.name] = targets
        for start in edges:
            path, stack = [start], [iter(sorted(edges[start]))]
            while stack:
                nxt = next(stack[-1], None)
                if nxt is None:
                    stack.pop()
                    path.pop()
                    continue
                if nxt in path:
                    cycle = path[path.index(nxt):] + [nxt]
                    raise ValueError(f"ParameterAlias cycle detected: {' -> '.join(cycle)}")
                if nxt in edges:
                    path.append(nxt)
                    stack.append(iter(sorted(edges[nxt])))

    def take(self, n: int) -> Iterator[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]:
        """Yield n cases; the same seed yields the same cases on every call."""
        import torch

        state = np.random.RandomState(self._seed)
        generator = torch.Generator()
        generator.manual_seed(int(state.randint(low=0, high=2**63, dtype=np.int64)))
        for _ in range(n):
            params = self._generate(state)
            tensors, properties = {}, {}
            for t in self._tensors:
                tensors[t.name], properties[t.name] = t._make_tensor(params, state, generator)
            yield tensors, properties, params

    @property
    def rejection_rate(self) -> float:
        return self._rejections / self._total_generated if self._total_generated else 0.0

    def _generate(self, state: np.random.RandomState) -> dict[str, Any]:
        strict: dict[str, Any] = {}
        reasons: collections.Counter[str] = collections.Counter()
        for _ in range(_MAX_ATTEMPTS):
            candidate = {}
            for p in self._parameters:
                if p.strict:
                    if p.name not in strict:
                        strict[p.name] = p.sample(state)
                    candidate[p.name] = strict[p.name]
                else:
                    candidate[p.name] = p.sample(state)
            candidate = self._resolve_aliases(candidate)
            self._total_generated += 1
            reason = self._rejection_reason(candidate)
            if reason is None:
                return candidate
            self._rejections += 1
            reasons[reason] += 1
        self._rejection_reasons.update(reasons)
        summary = "; ".join(f"{r} ({k}x)" for r, k in reasons.most_common())
        raise ValueError(
            f"Failed to generate a set of valid parameters in {_MAX_ATTEMPTS} attempts "
            f"(seed {self._seed}). Rejections: {summary}"
        )

    def _rejection_reason(self, params: dict[str, Any]) -> str | None:
        for i, constraint in enumerate(self._constraints):
            if not constraint(params):
                return f"constraint #{i} {getattr(constraint, '__name__', '')}".rstrip()
        for t in self._tensors:
            reason = t.rejection_reason(params)
            if reason is not None:
                return reason
        return None

    @staticmethod
    def _resolve_aliases(params: dict[str, Any]) -> dict[str, Any]:
        params = dict(params)
        # Cycles were rejected at construction, so this terminates.
        while any(isinstance(v, ParameterAlias) for v in params.values()):
            for k, v in params.items():
                if isinstance(v, ParameterAlias):
                    params[k] = params[v.alias_to]
        return params
