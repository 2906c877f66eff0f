"""Maps, reductions and sibling reductions over inputs of every stride pattern along the last axis.

A map whose inputs are not all C-contiguous arrays of the output's shape runs as a loop nest with run-time
strides; the llvm backends add a copy of that nest for the common case where every input steps by its element
size along the last axis (a row slice, `m[None, :]`, an F-ordered array's transpose...), tested once per call.
Each case here is compared with NumPy, so that both copies (and the test choosing between them) are exercised:
unit inner strides, broadcast (stride 0) inner axes, and strided views.
"""
import numpy as np
import pytest

from helpers import J

RNG = np.random.default_rng(23)
A = RNG.standard_normal((37, 41))
ROW = RNG.standard_normal(41)
COL = RNG.standard_normal((37, 1))

INPUTS = {
    "C": lambda: (A, ROW),
    "row slice (unit inner, not C)": lambda: (A[:, 3:], ROW[3:]),
    "broadcast row m[None, :]": lambda: (A, ROW[None, :]),
    "broadcast column (inner stride 0)": lambda: (A, COL),
    "strided inner view": lambda: (A[:, ::2], ROW[::2]),
    "reversed inner view": lambda: (A[:, ::-1], ROW[::-1]),
    "F order": lambda: (np.asfortranarray(A), ROW),
    "transposed": lambda: (A.T[:, :37], RNG.standard_normal(37)),
}


def expr(a, r):
    return a / (r * r + 1.0) - np.sqrt(np.abs(a))


def whole(a, r):
    return (a * r).sum(), (a - r).max()


def along(a, r):
    return (a * r).sum(axis=1), (a + r).min(axis=0)


@pytest.mark.parametrize("case", list(INPUTS))
@pytest.mark.parametrize("fn", [expr, whole, along], ids=["map", "reductions", "axis reductions"])
def test_every_stride_pattern_gives_numpys_result(case, fn):
    a, r = INPUTS[case]()
    got, exp = J(fn)(a, r), fn(a, r)
    for g, e in zip(got if isinstance(got, tuple) else (got,), exp if isinstance(exp, tuple) else (exp,)):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)


def test_the_unit_copy_and_the_general_one_in_one_function():
    """One compiled function called with unit and non-unit inner strides takes each copy in turn."""
    f = J(expr)
    for case in INPUTS:
        a, r = INPUTS[case]()
        if r.shape[-1] == 1:
            continue
        np.testing.assert_allclose(f(np.ascontiguousarray(a)[:, 1:], r[..., 1:]),
                                   expr(np.ascontiguousarray(a)[:, 1:], r[..., 1:]), rtol=1e-12)
        np.testing.assert_allclose(f(a[:, 1::3], r[..., 1::3]), expr(a[:, 1::3], r[..., 1::3]), rtol=1e-12)


# ---------------------------------------------------------------- reductions along the last axis, line by line


@pytest.mark.parametrize("length", [1, 3, 15, 16, 17, 1000])
@pytest.mark.parametrize("case", ["C", "row slice (unit inner, not C)", "strided inner view", "F order"])
def test_reductions_along_the_last_axis_of_any_length(length, case):
    a = RNG.standard_normal((23, length))
    a = {"C": a, "row slice (unit inner, not C)": RNG.standard_normal((23, length + 2))[:, 2:],
         "strided inner view": RNG.standard_normal((23, 2 * length))[:, ::2], "F order": np.asfortranarray(a)}[case]

    def f(a):
        return a.sum(axis=1), (a * a).max(axis=-1), a.min(axis=1), np.prod(a * 0.5 + 1.0, axis=1)

    for g, e in zip(J(f)(a), f(a)):
        np.testing.assert_allclose(g, e, rtol=1e-12)


def test_line_reductions_keep_nans_ints_and_bools():
    a = RNG.standard_normal((5, 40))
    a[2, 33] = np.nan
    i = RNG.integers(-100, 100, (7, 50)).astype(np.int32)

    def f(a, i):
        return a.max(axis=1), a.min(axis=1), i.sum(axis=1), (i > 90).any(axis=1), (i > -100).all(axis=1)

    for g, e in zip(J(f)(a, i), f(a, i)):
        assert np.asarray(g).dtype == np.asarray(e).dtype
        np.testing.assert_array_equal(g, e)


def test_three_dimensional_lines():
    a = RNG.standard_normal((4, 6, 33))

    def f(a):
        return (a * 2.0).sum(axis=2), a.sum(axis=-1).sum(axis=-1)

    for g, e in zip(J(f)(a), f(a)):
        np.testing.assert_allclose(g, e, rtol=1e-12)


def test_an_error_in_a_line_is_raised():
    def f(a, d):
        return (a // d).sum(axis=1)

    a = RNG.integers(1, 9, (4, 40))
    d = np.ones(40, np.int64)
    np.testing.assert_array_equal(J(f)(a, d), f(a, d))
    d[37] = 0
    with pytest.raises(ZeroDivisionError):
        J(f)(a, d)
