"""Every new array is an allocation statement made before the code that fills it (ir/explicit_alloc.c; the
invariant in ir/ir.h): f.inspect_types(...) shows the IR after all passes, compared as text, and the results and
errors are NumPy's. A gpu backend allocates device memory on the host before it launches anything, so the
shape of each new array must be computed in the IR, ahead of the fill."""
import re

import numpy as np
import pytest

import lorikeet as lk

RNG = np.random.default_rng(9)
_jitted = {}


def J(fn):
    d = _jitted.get(fn)
    if d is None:
        d = _jitted[fn] = lk.jit(fn)
    return d


def ir_of(fn, *args):
    return J(fn).inspect_types(*args)


def body_of(ir):
    """The statements of the first function, without its def line."""
    return ir.split("\n\n")[0].split("\n", 1)[1]


def fills_without_out(ir):
    """Calls of the array-making intrinsics, reductions along an axis and scans that are not given an out."""
    found = []
    for line in ir.splitlines():
        for m in re.finditer(r"\b(matmul|concatenate|mask_select)\(", line):
            if ", out=" not in line[m.start():]:
                found.append(line.strip())
    return found


# ---------------------------------------------------------------- the intrinsics that make new arrays


def matmul_plus_one(a, b):
    return (a @ b) + 1.0


MATMUL_IR = """\
    $t5 = alloc array(float64, 2d, C) ((a.shape[0] if (a.shape[1] == b.shape[0]) else 0:int64), b.shape[1])  \
: array(float64, 2d, C)
    matmul(a, b, out=$t5)
    $t6 = alloc array(float64, 2d, C) (bcast_shape[0]($t5), bcast_shape[1]($t5))  : array(float64, 2d, C)
    map(lambda $t4: ($t4 + 1:float64), $t5, out=$t6)
    return $t6
"""


def test_matmul_fills_an_allocation_of_rows_of_a_by_columns_of_b():
    a, b = RNG.standard_normal((5, 3)), RNG.standard_normal((3, 4))
    assert body_of(ir_of(matmul_plus_one, a, b)) == MATMUL_IR
    np.testing.assert_allclose(J(matmul_plus_one)(a, b), a @ b + 1.0, rtol=1e-12)


def test_matmul_shape_error_is_a_value_error_whatever_the_result_size():
    # rows of A times columns of B would be 8e10 elements: the allocation is of (0, n) when k differs
    a, b = np.zeros((200_000, 3)), np.zeros((4, 200_000))
    with pytest.raises(ValueError):
        a @ b
    with pytest.raises(ValueError):
        J(matmul_plus_one)(a, b)


def test_matmul_of_empty_operands():
    for (m, k, n) in [(0, 3, 4), (5, 0, 4), (5, 3, 0)]:
        a, b = np.ones((m, k)), np.ones((k, n))
        np.testing.assert_array_equal(J(matmul_plus_one)(a, b), a @ b + 1.0)


def concat_columns(a, b):
    return np.concatenate((a, b), axis=1)


CONCAT_IR = """\
    $t4 = (a, b)  : (array(float64, 2d, C), array(float64, 2d, C))
    $t5 = $t4[0]  : array(float64, 2d, C)
    $t6 = $t4[1]  : array(float64, 2d, C)
    $t7 = alloc array(float64, 2d, C) ($t5.shape[0], ($t5.shape[1] + $t6.shape[1]))  : array(float64, 2d, C)
    concatenate($t5, $t6, 1:int64, out=$t7)
    return $t7
"""


def test_concatenate_fills_an_allocation_summing_the_axis():
    a, b = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 5))
    assert body_of(ir_of(concat_columns, a, b)) == CONCAT_IR
    np.testing.assert_array_equal(J(concat_columns)(a, b), np.concatenate((a, b), axis=1))


def test_concatenate_shape_error_is_numpys():
    a, b = np.ones((4, 3)), np.ones((5, 3))
    with pytest.raises(ValueError):
        np.concatenate((a, b), axis=1)
    with pytest.raises(ValueError):
        J(concat_columns)(a, b)


def masked_twice(a, m):
    return a[m] * 2.0


MASK_IR = """\
    $t6 = reduce[add](map(lambda $t5: int64($t5), m))  : int64
    $t7 = alloc array(float64, 1d, C) ($t6)  : array(float64, 1d, C)
    mask_select(a, m, out=$t7)
    $t8 = alloc array(float64, 1d, C) (bcast_shape[0]($t7))  : array(float64, 1d, C)
    map(lambda $t4: ($t4 * 2:float64), $t7, out=$t8)
    return $t8
"""


def test_mask_select_counts_the_mask_then_allocates_then_fills():
    a = RNG.standard_normal((6, 7))
    m = a > 0.3
    assert body_of(ir_of(masked_twice, a, m)) == MASK_IR
    np.testing.assert_array_equal(J(masked_twice)(a, m), a[m] * 2.0)
    none = np.zeros_like(m)
    np.testing.assert_array_equal(J(masked_twice)(a, none), a[none] * 2.0)


def test_mask_shape_error_is_an_index_error():
    a, m = np.ones((6, 7)), np.ones((6, 8), dtype=bool)
    with pytest.raises(IndexError):
        a[m]
    with pytest.raises(IndexError):
        J(masked_twice)(a, m)


def intrinsics_in_a_loop(a, b, m):
    t = 0.0
    for i in range(3):
        t += (a @ b).sum() + a[m].sum() + np.concatenate((a, a)).sum()
    return t


def test_intrinsics_in_a_loop_body_are_allocated_there_and_agree_with_numpy():
    a, b = RNG.standard_normal((4, 4)), RNG.standard_normal((4, 2))
    m = a > 0
    ir = ir_of(intrinsics_in_a_loop, a, b, m)
    assert fills_without_out(ir) == [], ir
    exp = 0.0
    for i in range(3):
        exp += (a @ b).sum() + a[m].sum() + np.concatenate((a, a)).sum()
    np.testing.assert_allclose(J(intrinsics_in_a_loop)(a, b, m), exp, rtol=1e-12)
