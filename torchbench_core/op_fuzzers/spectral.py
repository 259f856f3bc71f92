from __future__ import annotations

import math
from typing import Any, Iterator

from ..fuzzer import FuzzedParameter, FuzzedTensor, Fuzzer, ParameterAlias
from ._shapes import MAX_ALLOCATION_BYTES, STEP_DISTRIBUTION

MIN_DIM_SIZE = 16
MAX_DIM_SIZE = 16 * 1024


def _powers(upper_bound: int, base: int) -> Iterator[int]:
    return (base**i for i in range(int(math.log(upper_bound, base)) + 1))


# "Regular" numbers 2^a 3^b 5^c: the sizes FFT libraries handle fastest.
REGULAR_SIZES = sorted(
    i * j * k
    for i in _powers(MAX_DIM_SIZE, 2)
    for j in _powers(MAX_DIM_SIZE // i, 3)
    for k in _powers(MAX_DIM_SIZE // (i * j), 5)
    if i * j * k > MIN_DIM_SIZE
)


class SpectralOpFuzzer(Fuzzer):
    """One float64 tensor `x` for FFTs; sizes are regular numbers with probability_regular."""

    def __init__(
        self, *, seed: int | None, dtype: Any = None, cuda: bool = False, probability_regular: float = 1.0
    ) -> None:
        import torch

        super().__init__(
            parameters=[
                FuzzedParameter("ndim", distribution={1: 0.3, 2: 0.4, 3: 0.3}, strict=True),
                [
                    FuzzedParameter(f"k_any_{i}", minval=MIN_DIM_SIZE, maxval=MAX_DIM_SIZE, distribution="loguniform")
                    for i in range(3)
                ],
                [
                    FuzzedParameter(
                        f"k_regular_{i}", distribution={size: 1.0 / len(REGULAR_SIZES) for size in REGULAR_SIZES}
                    )
                    for i in range(3)
                ],
                [
                    FuzzedParameter(
                        f"k{i}",
                        distribution={
                            ParameterAlias(f"k_regular_{i}"): probability_regular,
                            ParameterAlias(f"k_any_{i}"): 1 - probability_regular,
                        },
                        strict=True,
                    )
                    for i in range(3)
                ],
                [FuzzedParameter(f"step_{i}", distribution=STEP_DISTRIBUTION) for i in range(3)],
            ],
            tensors=[
                FuzzedTensor(
                    name="x",
                    size=("k0", "k1", "k2"),
                    steps=("step_0", "step_1", "step_2"),
                    probability_contiguous=0.75,
                    min_elements=4 * 1024,
                    max_elements=32 * 1024**2,
                    max_allocation_bytes=MAX_ALLOCATION_BYTES,
                    dim_parameter="ndim",
                    dtype=torch.float64 if dtype is None else dtype,
                    cuda=cuda,
                ),
            ],
            seed=seed,
        )
