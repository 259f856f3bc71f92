from __future__ import annotations

from typing import Any

from ..fuzzer import FuzzedParameter, FuzzedTensor, Fuzzer
from ._shapes import MAX_ALLOCATION_BYTES, STEP_DISTRIBUTION, dim_and_sizes, random_value


class UnaryOpFuzzer(Fuzzer):
    """One tensor `x`: 1-3 dims, 4K to 32M elements, sometimes strided or permuted."""

    def __init__(self, seed: int | None, dtype: Any = None, cuda: bool = False) -> None:
        super().__init__(
            parameters=[
                *dim_and_sizes(),
                [FuzzedParameter(f"x_step_{i}", distribution=STEP_DISTRIBUTION) for i in range(3)],
                random_value(),
            ],
            tensors=[
                FuzzedTensor(
                    name="x",
                    size=("k0", "k1", "k2"),
                    steps=("x_step_0", "x_step_1", "x_step_2"),
                    probability_contiguous=0.75,
                    min_elements=4 * 1024,
                    max_elements=32 * 1024**2,
                    max_allocation_bytes=MAX_ALLOCATION_BYTES,
                    dim_parameter="dim",
                    dtype=dtype,
                    cuda=cuda,
                ),
            ],
            seed=seed,
        )
