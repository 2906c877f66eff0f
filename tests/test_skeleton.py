"""One function through every layer: scalars, a loop, an array expression, a reduction, against CPython/NumPy."""
import numpy as np
import pytest

import lorikeet as lk


def scalar_loop(n):
    s = 0
    for i in range(n):
        if i % 3 == 0:
            s += i * i
        elif i % 5 == 1:
            s -= 1
    return s


def hypot_sum(a, b):
    return np.sqrt(a * a + b * b).sum()


@pytest.mark.parametrize("n", [0, 1, 7, 1000])
def test_scalar_loop_matches_cpython(n):
    assert lk.jit(scalar_loop)(n) == scalar_loop(n)


def test_array_expression_and_reduction_match_numpy():
    rng = np.random.default_rng(0)
    a, b = rng.random(1001), rng.random(1001)
    assert lk.jit(hypot_sum)(a, b) == pytest.approx(hypot_sum(a, b), rel=1e-12)


def test_out_of_bounds_raises_index_error_with_line():
    @lk.jit
    def get(a, i):
        return a[i]

    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 5") as e:
        get(np.zeros(5), 5)
    assert "return a[i]" in str(e.value)
