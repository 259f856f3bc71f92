from __future__ import annotations

from typing import Any

from ..fuzzer import FuzzedParameter, Fuzzer
from ._shapes import STEP_DISTRIBUTION, dim_and_sizes, random_value, x_tensor


class UnaryOpFuzzer(Fuzzer):
    """One tensor `x`: 1-3 dims, 4K to 32M elements, sometimes strided or permuted."""

    def __init__(self, seed: int | None, dtype: Any = None, cuda: bool = False) -> None:
        super().__init__(
            parameters=[
                *dim_and_sizes(),
                [FuzzedParameter(f"x_step_{i}", distribution=STEP_DISTRIBUTION) for i in range(3)],
                random_value(),
            ],
            tensors=[x_tensor(dtype, cuda)],
            seed=seed,
        )
