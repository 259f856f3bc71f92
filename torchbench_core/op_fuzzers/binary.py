from __future__ import annotations

from typing import Any

from ..fuzzer import FuzzedParameter, FuzzedTensor, Fuzzer, ParameterAlias
from ._shapes import MAX_ALLOCATION_BYTES, STEP_DISTRIBUTION, dim_and_sizes, random_value, x_tensor


class BinaryOpFuzzer(Fuzzer):
    """Tensors `x` and `y` of one dimensionality; `y` sometimes broadcasts (size-1 dims).

    Unlike torch 2.13, `y` is strided by its own `y_step_*` parameters
    (torch draws them and then uses x's steps for y).
    """

    def __init__(self, seed: int | None, dtype: Any = None, cuda: bool = False) -> None:
        super().__init__(
            parameters=[
                *dim_and_sizes(),
                [
                    FuzzedParameter(f"y_k{i}", distribution={ParameterAlias(f"k{i}"): 0.8, 1: 0.2}, strict=True)
                    for i in range(3)
                ],
                [
                    FuzzedParameter(f"{name}_step_{i}", distribution=STEP_DISTRIBUTION)
                    for i in range(3)
                    for name in ("x", "y")
                ],
                random_value(),
            ],
            tensors=[
                x_tensor(dtype, cuda),
                FuzzedTensor(
                    name="y",
                    size=("y_k0", "y_k1", "y_k2"),
                    steps=("y_step_0", "y_step_1", "y_step_2"),
                    probability_contiguous=0.75,
                    max_allocation_bytes=MAX_ALLOCATION_BYTES,
                    dim_parameter="dim",
                    dtype=dtype,
                    cuda=cuda,
                ),
            ],
            seed=seed,
        )
