import math

import pytest
from torch.utils.benchmark.utils import common as torch_common

from torchbench_core.units import select_unit, trim_sigfig, unit_to_english


@pytest.mark.parametrize("t", [1.5e-9, 3e-8, 7.7e-7, 2.2e-6, 4e-5, 9e-4, 1.2e-2, 0.5, 3.0, 250.0])
def test_select_unit_matches_torch_from_one_nanosecond_up(t):
    assert select_unit(t) == torch_common.select_unit(t)


def test_sub_nanosecond_times_get_picoseconds():
    """torch maps anything under 1 ns to seconds and shows '0.00 s'."""
    assert torch_common.select_unit(4e-10) == ("s", 1)
    assert select_unit(4e-10) == ("ps", 1e-12)
    assert select_unit(4e-16)[0] == "ps"
    assert unit_to_english("ps") == "picosecond"


@pytest.mark.parametrize("x, n", [(3.14159, 2), (152418.7, 2), (0.000123456, 3), (99.95, 3), (1.0, 1), (7.7, 1)])
def test_trim_sigfig_agrees_with_torch_without_float32_artefacts(x, n):
    ours, theirs = trim_sigfig(x, n), torch_common.trim_sigfig(x, n)
    assert ours == pytest.approx(theirs, rel=1e-6)
    # Ours is the exact decimal rounding: its repr has at most n digits.
    digits = repr(ours).replace(".", "").replace("-", "").strip("0").rstrip("0")
    assert len(digits.split("e")[0]) <= n


def test_trim_sigfig_edge_cases():
    assert trim_sigfig(3.14159, 2) == 3.1  # torch: 3.1000001430511475
    assert trim_sigfig(0.0, 2) == 0.0
    assert math.isinf(trim_sigfig(math.inf, 2))
    with pytest.raises(ValueError):
        trim_sigfig(1.0, 1.5)
