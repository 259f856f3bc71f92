"""Parameter families shared by the unary and binary op fuzzers."""

from __future__ import annotations

import numpy as np

from typing import Any

from ..fuzzer import FuzzedParameter, FuzzedTensor, ParameterAlias

MIN_DIM_SIZE = 16
MAX_DIM_SIZE = 16 * 1024**2
POW_TWO_SIZES = tuple(2**i for i in range(int(np.log2(MIN_DIM_SIZE)), int(np.log2(MAX_DIM_SIZE)) + 1))
STEP_DISTRIBUTION = {1: 0.8, 2: 0.06, 4: 0.06, 8: 0.04, 16: 0.04}
MAX_ALLOCATION_BYTES = 2 * 1024**3  # 2 GB


def dim_and_sizes() -> list:
    """Dimensionality, then per dimension a size that is 80% any value
    (loguniform) and 20% a power of two, which deserves extra attention."""
    return [
        FuzzedParameter("dim", distribution={1: 0.3, 2: 0.4, 3: 0.3}, strict=True),
        [
            FuzzedParameter(f"k_any_{i}", minval=MIN_DIM_SIZE, maxval=MAX_DIM_SIZE, distribution="loguniform")
            for i in range(3)
        ],
        [
            FuzzedParameter(f"k_pow2_{i}", distribution={size: 1.0 / len(POW_TWO_SIZES) for size in POW_TWO_SIZES})
            for i in range(3)
        ],
        [
            FuzzedParameter(
                f"k{i}",
                distribution={ParameterAlias(f"k_any_{i}"): 0.8, ParameterAlias(f"k_pow2_{i}"): 0.2},
                strict=True,
            )
            for i in range(3)
        ],
    ]


def random_value() -> FuzzedParameter:
    """Repeatable entropy for downstream use."""
    return FuzzedParameter(name="random_value", minval=0, maxval=2**32 - 1, distribution="uniform")


def x_tensor(dtype: Any, cuda: bool) -> FuzzedTensor:
    """`x`: 4K to 32M elements, at most 2 GB allocated, contiguous 75% of the time."""
    return FuzzedTensor(
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
    )
