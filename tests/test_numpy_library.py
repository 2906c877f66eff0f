"""The NumPy library of issue 3 against NumPy itself: constructors and views, reductions (axis, keepdims), scans,
the ufunc list, where/clip/dot/matmul/outer/astype, array methods, boolean-mask and integer-array indexing for
reading, and np.array comprehensions. Each test runs the same function under NumPy and under lorikeet and
compares dtype, shape and values (NaN equal to NaN), on random data and edge cases: empty arrays, size-1 axes,
NaN/inf, negative values, int32/int64/float32/float64, and non-contiguous inputs (a[::2], a.T, a[::-1])."""
import math

import numpy as np
import pytest

import lorikeet as lk
from helpers import J

RNG = np.random.default_rng(3)
F64, F32, I64, I32 = np.float64, np.float32, np.int64, np.int32



def rand(shape, dtype=F64, lo=-5.0, hi=5.0):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return RNG.uniform(lo, hi, shape).astype(dtype)
    if dtype.kind == "b":
        return RNG.random(shape) < 0.5
    return RNG.integers(int(lo), int(hi), shape, endpoint=True).astype(dtype)


def ulps(dtype):
    """A tight relative tolerance: a few units in the last place of the result type."""
    return 8 * float(np.finfo(dtype).eps)


def check(got, expected, rtol=None, atol=0.0):
    g, e = np.asarray(got), np.asarray(expected)
    assert g.dtype == e.dtype, f"dtype {g.dtype} != NumPy's {e.dtype}"
    assert g.shape == e.shape, f"shape {g.shape} != NumPy's {e.shape}"
    if e.dtype.kind == "f":
        np.testing.assert_allclose(g, e, rtol=ulps(e.dtype) if rtol is None else rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(g, e)


def same(fn, *args, rtol=None, atol=0.0):
    """fn under lorikeet equals fn under NumPy (each on its own copy of the arguments)."""
    with np.errstate(all="ignore"):
        exp = fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    got = J(fn)(*args)
    if isinstance(exp, tuple):
        assert isinstance(got, tuple) and len(got) == len(exp)
        for g, e in zip(got, exp):
            check(g, e, rtol, atol)
    else:
        check(got, exp, rtol, atol)
    return got


def noncontig(a):
    """Views of a with other strides: every other element, reversed, transposed (for 2-D)."""
    out = [a[::2], a[::-1]]
    if a.ndim == 2:
        out += [a.T, a[::2, ::-1]]
    return out


# ================================================================ constructors


def c_zeros(n):
    return np.zeros(n)


def c_zeros2(n, m):
    return np.zeros((n, m))


def c_zeros_f32(n, m):
    return np.zeros((n, m), dtype=np.float32)


def c_ones(n):
    return np.ones(n)


def c_ones_i32(n, m):
    return np.ones((n, m), dtype=np.int32)


def c_ones_bool(n):
    return np.ones(n, dtype=bool)


def c_full_int(n):
    return np.full((n, 2), 7)


def c_full_float(n):
    return np.full(n, 2.5)


def c_full_dtype(n):
    return np.full((2, n), 3, dtype=np.float32)


def c_full_nan(n):
    return np.full(n, np.nan)


def c_empty(n, m):
    return np.empty((n, m))


def c_empty_i32(n):
    return np.empty(n, dtype=np.int32)


@pytest.mark.parametrize("n", [0, 1, 5])
def test_zeros_ones_full(n):
    for f in (c_zeros, c_ones, c_ones_bool, c_full_int, c_full_float, c_full_dtype, c_full_nan):
        same(f, n)
    for m in (0, 1, 3):
        same(c_zeros2, n, m)
        same(c_zeros_f32, n, m)
        same(c_ones_i32, n, m)


@pytest.mark.parametrize("n", [0, 1, 4])
def test_empty_shape_and_dtype(n):
    r = J(c_empty)(n, 3)
    assert r.shape == (n, 3) and r.dtype == np.float64 and r.flags.c_contiguous and r.flags.writeable
    r = J(c_empty_i32)(n)
    assert r.shape == (n,) and r.dtype == np.int32


def c_zeros_like(a):
    return np.zeros_like(a)


def c_ones_like(a):
    return np.ones_like(a)


def c_full_like(a):
    return np.full_like(a, 2.7)


def c_full_like_nan(a):
    return np.full_like(a, np.nan)


def c_like_dtype(a):
    return np.zeros_like(a, dtype=np.int32), np.ones_like(a, dtype=np.float32), np.full_like(a, 5, dtype=np.int64)


def c_empty_like(a):
    return np.empty_like(a)


@pytest.mark.parametrize("dtype", [F64, F32, I32, bool])
@pytest.mark.parametrize("shape", [(0,), (1,), (4,), (2, 3), (3, 0)])
def test_like_constructors(dtype, shape):
    a = rand(shape, dtype)
    for f in (c_zeros_like, c_ones_like, c_full_like, c_like_dtype):
        same(f, a)
    r = J(c_empty_like)(a)
    assert r.shape == a.shape and r.dtype == a.dtype


def test_like_constructors_of_views_are_c_contiguous():
    a = rand((4, 6))
    for v in noncontig(a):
        r = same(c_ones_like, v)
        assert r.flags.c_contiguous or r.ndim == 1 and r.flags.contiguous
    same(c_full_like_nan, a.T)


def c_arange1(n):
    return np.arange(n)


def c_arange2(a, b):
    return np.arange(a, b)


def c_arange3(a, b, s):
    return np.arange(a, b, s)


def c_arange_f32(n):
    return np.arange(n, dtype=np.float32)


def c_arange_float_step():
    return np.arange(0.0, 1.0, 0.1)


@pytest.mark.parametrize("args", [(0,), (1,), (7,), (-3,)])
def test_arange_stop(args):
    same(c_arange1, *args)
    same(c_arange_f32, *args)
    same(c_arange1, float(args[0]) + 0.5)


@pytest.mark.parametrize("a,b", [(2, 9), (9, 2), (-4, 4), (3, 3), (1.5, 4.0), (-2.25, 3)])
def test_arange_start_stop(a, b):
    same(c_arange2, a, b)


@pytest.mark.parametrize("a,b,s", [(0, 10, 3), (10, 0, -3), (5, 0, -1), (0, 1, 2), (1.0, 2.0, 0.25),
                                   (2.0, -1.0, -0.5), (0, 5, -1)])
def test_arange_start_stop_step(a, b, s):
    same(c_arange3, a, b, s)


def test_arange_float_step_length_like_numpy():
    same(c_arange_float_step)


def c_linspace(a, b, n):
    return np.linspace(a, b, n)


def c_linspace_noend(a, b, n):
    return np.linspace(a, b, n, endpoint=False)


def c_linspace_default(a, b):
    return np.linspace(a, b)


@pytest.mark.parametrize("a,b", [(0.0, 1.0), (-3.5, 2.0), (5.0, -5.0), (1.0, 1.0), (0, 10)])
@pytest.mark.parametrize("n", [0, 1, 2, 7, 50])
def test_linspace(a, b, n):
    same(c_linspace_noend, a, b, n)
    same(c_linspace, a, b, n)


def test_linspace_default_num():
    same(c_linspace_default, -1.0, 3.0)


def c_eye(n):
    return np.eye(n)


def c_eye_nm(n, m):
    return np.eye(n, m)


def c_eye_k(n, m, k):
    return np.eye(n, m, k)


def c_eye_int(n):
    return np.eye(n, dtype=np.int32)


def c_identity(n):
    return np.identity(n)


@pytest.mark.parametrize("n", [0, 1, 4])
def test_eye_identity(n):
    same(c_eye, n)
    same(c_eye_int, n)
    same(c_identity, n)
    for m in (0, 1, 3, 6):
        same(c_eye_nm, n, m)
        for k in (-2, -1, 1, 3):
            same(c_eye_k, n, m, k)


# ================================================================ copies and views


def v_np_copy(a):
    return np.copy(a)


def v_copy_method(a):
    return a.copy()


def v_reshape_args(a):
    return a.reshape(3, 4)


def v_reshape_tuple(a):
    return a.reshape((2, 6))


def v_reshape_neg(a):
    return a.reshape(-1)


def v_reshape_neg2(a):
    return a.reshape(4, -1)


def v_np_reshape(a):
    return np.reshape(a, (-1, 2))


def v_reshape_3d(a):
    return a.reshape(2, -1, 3)


def v_ravel(a):
    return np.ravel(a)


def v_ravel_method(a):
    return a.ravel()


def v_flatten(a):
    return a.flatten()


def v_transpose(a):
    return np.transpose(a)


def v_transpose_method(a):
    return a.transpose()


def v_T(a):
    return a.T


def v_none0(a):
    return a[None]


def v_none1(a):
    return a[:, None]


def v_none_both(a):
    return a[None, :, None]


def v_expand0(a):
    return np.expand_dims(a, 0)


def v_expand1(a):
    return np.expand_dims(a, 1)


def v_expand_neg(a):
    return np.expand_dims(a, -1)


def test_copy_is_c_contiguous_and_independent():
    a = rand((4, 5))
    for v in [a] + noncontig(a):
        for f in (v_np_copy, v_copy_method):
            r = same(f, v)
            assert not np.shares_memory(r, v)
        r = J(v_copy_method)(v)
        assert r.flags.c_contiguous
    for e in (np.zeros(0), np.zeros((0, 3), F32), rand((1, 1), I32)):
        same(v_np_copy, e)
        same(v_copy_method, e)


def w_floor(a):
    b = np.floor(a)
    b[0] = 7
    return b


def w_ceil_trunc(a):
    b, c = np.ceil(a), np.trunc(a)
    b[0] = 7
    c[-1] = 5
    return b, c


def w_np_conj(a):
    b = np.conj(a)
    b[0] = 7
    return b


def w_conj_method(a):
    b = a.conj()  # NumPy's method gives a real array itself
    b[0] = 7
    return b


@pytest.mark.parametrize("dtype", [I32, np.int64, np.uint8, F64])
def test_ufuncs_that_keep_values_still_make_new_arrays(dtype):
    # np.floor/ceil/trunc of integers and np.conj of reals give the same values, in a new array: writing into it
    # leaves the argument as it was (they returned the argument itself, and the write reached it)
    for f in (w_floor, w_ceil_trunc, w_np_conj):
        a = np.arange(1, 7).astype(dtype)
        want, got_arg = f(a.copy()), a.copy()
        got = J(f)(got_arg)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)
        np.testing.assert_array_equal(got_arg, a)
    a = np.arange(1, 7).astype(dtype)
    J(w_conj_method)(a)
    assert a[0] == 7


@pytest.mark.parametrize("dtype", [F64, I32, F32])
def test_reshape_views_of_contiguous(dtype):
    a = rand((12,), dtype)
    for f in (v_reshape_args, v_reshape_tuple, v_reshape_neg, v_reshape_neg2, v_np_reshape, v_reshape_3d):
        r = same(f, a)
        assert np.shares_memory(r, a), f"{f.__name__} of a contiguous array is a view in NumPy"
    m = rand((3, 4), dtype)
    for f in (v_reshape_tuple, v_reshape_neg, v_np_reshape, v_reshape_3d):
        same(f, m)


def test_reshape_of_noncontiguous_copies():
    m = rand((4, 3))
    for f in (v_reshape_args, v_reshape_tuple, v_reshape_neg, v_reshape_neg2, v_np_reshape):
        same(f, m.T)
    a = rand((24,))
    same(v_reshape_args, a[::2])
    same(v_reshape_neg2, a[::-2])


def test_reshape_wrong_size_raises_value_error():
    with pytest.raises(ValueError):
        J(v_reshape_args)(np.zeros(10))
    with pytest.raises(ValueError):
        J(v_reshape_neg2)(np.zeros(10))


def test_reshape_empty():
    same(v_reshape_neg, np.zeros((0, 3)))
    same(v_np_reshape, np.zeros((0, 4)))


@pytest.mark.parametrize("dtype", [F64, I32])
def test_ravel_flatten(dtype):
    m = rand((3, 4), dtype)
    for f in (v_ravel, v_ravel_method, v_flatten):
        r = same(f, m)
        assert np.shares_memory(r, m) == (f is not v_flatten), f.__name__
        for v in noncontig(m):
            same(f, v)
        same(f, np.zeros((0, 2), dtype))
        same(f, rand((5,), dtype)[::-1])


def test_transpose_and_T():
    for a in (rand((3, 4)), rand((5,), I32), rand((2, 3, 4), F32), rand((1, 0))):
        for f in (v_transpose, v_transpose_method, v_T):
            r = same(f, a)
            assert np.shares_memory(r, a) or a.size == 0
    for v in noncontig(rand((3, 4))):
        same(v_T, v)


def test_new_axes_by_none():
    a = rand((5,))
    for f in (v_none0, v_none1, v_none_both, v_expand0, v_expand1, v_expand_neg):
        r = same(f, a)
        assert np.shares_memory(r, a)
        same(f, a[::-2])
        same(f, np.zeros(0, I32))
    m = rand((2, 3), I64)
    for f in (v_none0, v_none1, v_expand0, v_expand1, v_expand_neg):
        same(f, m)
        same(f, m.T)


def j_concat(a, b):
    return np.concatenate((a, b))


def j_concat3(a, b, c):
    return np.concatenate((a, b, c))


def j_concat_ax1(a, b):
    return np.concatenate((a, b), axis=1)


def j_stack(a, b):
    return np.stack((a, b))


def j_stack_ax1(a, b):
    return np.stack((a, b), axis=1)


def j_stack_neg(a, b):
    return np.stack((a, b), axis=-1)


def j_hstack(a, b):
    return np.hstack((a, b))


def j_vstack(a, b):
    return np.vstack((a, b))


@pytest.mark.parametrize("da,db", [(F64, F64), (I32, F32), (I64, I32)])
def test_concatenate_1d(da, db):
    a, b, c = rand((4,), da), rand((3,), db), rand((0,), da)
    same(j_concat, a, b)
    same(j_concat3, a, b, c)
    same(j_concat, a[::-1], b[::2])
    same(j_hstack, a, b)
    same(j_vstack, a, rand((4,), db))
    same(j_stack, a, rand((4,), db))
    same(j_stack_ax1, a, rand((4,), db))


def test_concatenate_2d():
    a, b = rand((2, 3)), rand((4, 3))
    same(j_concat, a, b)
    same(j_vstack, a, b)
    same(j_concat_ax1, a.T, b.T)
    same(j_hstack, a.T, b.T)
    same(j_concat, np.zeros((0, 3)), b)
    c, d = rand((2, 3), I32), rand((2, 3), I32)
    for f in (j_stack, j_stack_ax1, j_stack_neg, j_concat, j_concat_ax1, j_hstack, j_vstack):
        same(f, c, d)
        same(f, c[::-1], d[:, ::-1])


def test_concatenate_mismatch_raises_value_error():
    with pytest.raises(ValueError):
        J(j_concat_ax1)(np.zeros((2, 3)), np.zeros((3, 3)))
    with pytest.raises(ValueError):
        J(j_stack)(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError):
        J(j_vstack)(np.zeros(3), np.zeros(4))


# ================================================================ reductions


def make_red(fn, axis, keepdims):
    def red(a):
        return fn(a, axis=axis, keepdims=keepdims)

    return red


def make_red_ddof(fn, axis):
    def red_ddof(a):
        return fn(a, axis=axis, ddof=1)

    return red_ddof


# closures over constants: lorikeet resolves fn, axis and keepdims once, as constants
_red_keepdims = {(_fn.__name__, _axis, _kd): make_red(_fn, _axis, _kd)
                 for _fn in (np.sum, np.prod, np.mean, np.min, np.max, np.all, np.any, np.std, np.var, np.nansum,
                             np.nanmin, np.nanmax, np.argmin, np.argmax)
                 for _axis in (None, 0, 1, -1) for _kd in (False, True)}
_red_ddof = {(_fn.__name__, _axis): make_red_ddof(_fn, _axis) for _fn in (np.std, np.var) for _axis in (None, 0, 1)}

RED_NAMES = ["sum", "prod", "mean", "min", "max", "all", "any", "std", "var", "nansum", "nanmin", "nanmax",
             "argmin", "argmax"]


def red_tol(name, a):
    """Float reductions add in another order than NumPy's pairwise sum: allow a few ulps of sum(|a|) per element."""
    if a.dtype.kind != "f" or name in ("min", "max", "nanmin", "nanmax", "argmin", "argmax", "all", "any"):
        return dict()
    eps = float(np.finfo(a.dtype).eps)
    n = max(a.size, 1)
    if name == "prod":
        return dict(rtol=4 * n * eps)
    with np.errstate(all="ignore"):
        scale = float(np.nansum(np.abs(a)))
    return dict(rtol=4 * n * eps, atol=4 * n * eps * scale if np.isfinite(scale) else 0.0)


def red_data(name, shape, dtype):
    if name == "prod":
        return rand(shape, dtype, 0.5, 1.5) if np.dtype(dtype).kind == "f" else rand(shape, dtype, -2, 2)
    return rand(shape, dtype)


# All float64 2-D C-contiguous inputs below share one specialisation per function (compile time).
@pytest.mark.parametrize("name", RED_NAMES)
@pytest.mark.parametrize("axis,keepdims", [(None, False), (0, False), (1, False), (-1, False), (None, True),
                                           (1, True)])
def test_reduction_axis_keepdims(name, axis, keepdims):
    f = _red_keepdims[(name, axis, keepdims)]
    a = red_data(name, (4, 5), F64)
    same(f, a, **red_tol(name, a))
    for shape in ((1, 5), (5, 1), (1, 1)):  # size-1 axes
        b = red_data(name, shape, F64)
        same(f, b, **red_tol(name, b))


@pytest.mark.parametrize("name", RED_NAMES)
@pytest.mark.parametrize("axis", [None, 0])
def test_reduction_noncontiguous(name, axis):
    a = red_data(name, (6, 8), F64)
    for v in (a.T, a[::2, ::-3], a[::-1]):
        same(_red_keepdims[(name, axis, False)], v, **red_tol(name, v))


@pytest.mark.parametrize("name", RED_NAMES)
@pytest.mark.parametrize("dtype,axis", [(F32, None), (I32, 0), (bool, None)])
def test_reduction_dtypes(name, dtype, axis):
    a = red_data(name, (3, 6), dtype)
    same(_red_keepdims[(name, axis, False)], a, **red_tol(name, a))


@pytest.mark.parametrize("name", ["sum", "prod", "mean", "all", "any", "std", "var", "nansum"])
def test_reduction_of_empty_with_identity(name):
    e = np.zeros((0, 3))
    for axis, kd in ((None, False), (0, False), (1, False), (1, True), (None, True)):
        same(_red_keepdims[(name, axis, kd)], e)


@pytest.mark.parametrize("name", ["min", "max", "argmin", "argmax", "nanmin", "nanmax"])
def test_reduction_of_empty_without_identity_raises_value_error(name):
    e = np.zeros((0, 3))
    with pytest.raises(ValueError):
        J(_red_keepdims[(name, None, False)])(e)
    with pytest.raises(ValueError):
        J(_red_keepdims[(name, 0, False)])(e)
    same(_red_keepdims[(name, 1, False)], e)  # zero rows of length 3: shape (0,), no error


NAN_DATA = np.array([[1.0, np.nan, -3.0, 2.0], [np.nan, np.nan, np.nan, np.nan], [4.0, -np.inf, 0.5, np.inf],
                     [-0.0, 0.0, 7.0, -7.0]])


@pytest.mark.parametrize("name", RED_NAMES)
def test_reduction_with_nan_and_inf(name):
    for axis in (None, 0, 1):
        same(_red_keepdims[(name, axis, False)], NAN_DATA)
        same(_red_keepdims[(name, axis, False)], NAN_DATA[2:])


def test_argmin_argmax_first_occurrence_of_ties():
    a = np.array([[3, 1, 1, 5], [5, 5, 0, 0], [2, 2, 2, 2]], dtype=I64)
    for name in ("argmin", "argmax"):
        for axis in (None, 0, 1):
            same(_red_keepdims[(name, axis, False)], a)


@pytest.mark.parametrize("name", ["std", "var"])
@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("dtype", [F64, F32, I32])
def test_std_var_ddof(name, axis, dtype):
    a = rand((5, 4), dtype)
    same(_red_ddof[(name, axis)], a, **red_tol(name, a))
    same(_red_ddof[(name, axis)], a[:1], **red_tol(name, a))  # ddof=1 on one element per column: nan


def test_reduction_3d_middle_axis():
    a = rand((2, 3, 4))
    for name in ("sum", "max", "argmax", "mean", "any"):
        x = a > 0 if name == "any" else a
        same(_red_keepdims[(name, 1, False)], x, **red_tol(name, a))
        if name != "argmax":  # argmax(keepdims=True): test_reduction_axis_keepdims
            same(_red_keepdims[(name, 1, True)], x, **red_tol(name, a))


# ================================================================ scans


def s_cumsum(a):
    return np.cumsum(a)


def s_cumsum0(a):
    return np.cumsum(a, axis=0)


def s_cumsum1(a):
    return np.cumsum(a, axis=1)


def s_cumsum_neg(a):
    return np.cumsum(a, axis=-1)


def s_cumprod(a):
    return np.cumprod(a)


def s_cumprod0(a):
    return np.cumprod(a, axis=0)


def s_cumprod1(a):
    return np.cumprod(a, axis=1)


def s_cumsum_method(a):
    return a.cumsum(axis=1)


def s_cumprod_method(a):
    return a.cumprod()


SCANS = [s_cumsum, s_cumsum0, s_cumsum1, s_cumsum_neg, s_cumprod, s_cumprod0, s_cumprod1, s_cumsum_method,
         s_cumprod_method]


@pytest.mark.parametrize("f", SCANS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [F64, F32, I32, bool])
def test_scans(f, dtype):
    a = rand((3, 5), dtype, 0.5, 1.5) if np.dtype(dtype).kind == "f" else rand((3, 5), dtype, -3, 3)
    tol = dict(rtol=20 * ulps(dtype)) if np.dtype(dtype).kind == "f" else {}
    same(f, a, **tol)
    if dtype == F64:
        same(f, a.T, **tol)
        same(f, a[::-1, ::2], **tol)
    for e in (np.zeros((0, 3), dtype), np.zeros((3, 0), dtype), rand((1, 1), dtype)):
        same(f, e)


def test_scans_1d_and_nan():
    a = np.array([1.0, 2.0, np.nan, 4.0])
    same(s_cumsum, a)
    same(s_cumprod, a)
    same(s_cumsum0, rand((7,), I32)[::-1])


# ================================================================ ufuncs


def make_unary(uf):
    def un(a):
        return uf(a)

    return un


def make_binary(uf):
    def bi(a, b):
        return uf(a, b)

    return bi


# (ufunc, low, high): the domain float inputs are drawn from
UNARY = [(np.negative, -100, 100), (np.reciprocal, 0.1, 10), (np.sign, -3, 3), (np.absolute, -100, 100),
         (np.fabs, -100, 100), (np.sqrt, 0, 100), (np.square, -100, 100), (np.cbrt, -100, 100),
         (np.exp, -30, 30), (np.exp2, -30, 30), (np.expm1, -3, 3), (np.log, 0.01, 100), (np.log10, 0.01, 100),
         (np.log2, 0.01, 100), (np.log1p, -0.9, 10), (np.sin, -10, 10), (np.cos, -10, 10), (np.tan, -1.5, 1.5),
         (np.arcsin, -1, 1), (np.arccos, -1, 1), (np.arctan, -10, 10), (np.sinh, -10, 10), (np.cosh, -10, 10),
         (np.tanh, -5, 5), (np.arcsinh, -10, 10), (np.arccosh, 1, 10), (np.arctanh, -0.99, 0.99),
         (np.deg2rad, -360, 360), (np.rad2deg, -7, 7), (np.floor, -10, 10), (np.ceil, -10, 10),
         (np.trunc, -10, 10), (np.rint, -10, 10), (np.round, -10, 10), (np.logical_not, -1, 1),
         (np.isnan, -1, 1), (np.isinf, -1, 1), (np.isfinite, -1, 1)]
UNARY_IDS = [u.__name__ for u, _, _ in UNARY]  # np.abs is np.absolute
UNARY_FNS = {name: make_unary(u) for name, (u, _, _) in zip(UNARY_IDS, UNARY)}

BINARY = [np.add, np.subtract, np.multiply, np.divide, np.true_divide, np.floor_divide, np.mod, np.remainder,
          np.power, np.minimum, np.maximum, np.fmin, np.fmax, np.logaddexp, np.logaddexp2, np.arctan2, np.hypot,
          np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal, np.logical_and,
          np.logical_or, np.logical_xor]
BINARY_IDS = ["add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "mod", "remainder", "power",
              "minimum", "maximum", "fmin", "fmax", "logaddexp", "logaddexp2", "arctan2", "hypot", "equal",
              "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or",
              "logical_xor"]
BINARY_FNS = {name: make_binary(b) for name, b in zip(BINARY_IDS, BINARY)}

# NaN, infinities, signed zeros, halves (rounding), huge and subnormal values: as 4x4 so that the special-value
# tests reuse the specialisation for 2-D C-contiguous arrays
SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5, 1e300, -1e-300, 5e-324,
                    1.5, 100.0]).reshape(4, 4)


def unary_input(name, lo, hi, shape, dtype):
    a = rand(shape, dtype, lo, hi)
    if np.dtype(dtype).kind == "i" and name in ("sqrt", "log1p", "log", "log2", "log10", "reciprocal"):
        a = np.abs(a) + 1
    return a


@pytest.mark.parametrize("uf,lo,hi", UNARY, ids=UNARY_IDS)
@pytest.mark.parametrize("dtype", [F64, F32])
def test_unary_ufunc_float(uf, lo, hi, dtype):
    name = UNARY_IDS[[u for u, _, _ in UNARY].index(uf)]
    f = UNARY_FNS[name]
    same(f, rand((3, 7), dtype, lo, hi))
    same(f, SPECIAL.astype(dtype))
    same(f, np.zeros((0, 2), dtype))
    same(f, rand((1, 1), dtype, lo, hi))


# Long arrays go through the vectorised loop, where exp, log, sin... are libmvec's vector functions (where the
# C library has them): each result stays within a few ulp of NumPy's, special values included, in the vector
# body and in the scalar remainder alike (1003 = 4 * 250 + 3).
VECTOR_MATH = ["cbrt", "exp", "exp2", "expm1", "log", "log10", "log2", "log1p", "sin", "cos", "tan", "arcsin",
               "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh"]


@pytest.mark.parametrize("name", VECTOR_MATH)
@pytest.mark.parametrize("dtype", [F64, F32])
def test_vectorised_math_matches_numpy_on_long_arrays(name, dtype):
    lo, hi = [(lo, hi) for (u, lo, hi), n in zip(UNARY, UNARY_IDS) if n == name][0]
    f = UNARY_FNS[name]
    same(f, rand(1003, dtype, lo, hi))
    with np.errstate(over="ignore"):
        special = np.tile(SPECIAL.ravel(), 63).astype(dtype)
    same(f, special)


@pytest.mark.parametrize("name", ["power", "arctan2", "hypot"])
@pytest.mark.parametrize("dtype", [F64, F32])
def test_vectorised_binary_math_matches_numpy_on_long_arrays(name, dtype):
    a, b = rand(1003, dtype, 0.1, 10), rand(1003, dtype, -3, 3)
    same(BINARY_FNS[name], a, b)
    with np.errstate(over="ignore"):
        special = np.tile(SPECIAL.ravel(), 63).astype(dtype)
    same(BINARY_FNS[name], special, special[::-1].copy())


def loop_of_erf(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = math.erf(x[i]) + math.erfc(x[i] * 0.5)
    return out


def test_loop_calling_scalar_math_matches_cpython():
    x = rand(1003, F64, -4, 4)
    got = J(loop_of_erf)(x)
    expected = np.array([math.erf(v) + math.erfc(v * 0.5) for v in x.tolist()])
    np.testing.assert_allclose(got, expected, rtol=ulps(F64))


# strided access is shared by all ufuncs (the map's indexing): a few representatives of each kind
@pytest.mark.parametrize("name", ["negative", "sqrt", "exp", "arctanh", "floor", "rint", "sign", "isnan"])
def test_unary_ufunc_noncontiguous(name):
    lo, hi = [(lo, hi) for (u, lo, hi), n in zip(UNARY, UNARY_IDS) if n == name][0]
    a = rand((6, 8), F64, lo, hi)
    for v in (a.T, a[::2, ::-3], a[::-1]):
        same(UNARY_FNS[name], v)


# arcsin, arccos, arctanh and arccosh have no integer inputs inside their domain but its edges
UNARY_INT = [(u, lo, hi) for (u, lo, hi), n in zip(UNARY, UNARY_IDS) if n not in ("arcsin", "arccos", "arctanh", "arccosh")]


@pytest.mark.parametrize("uf,lo,hi", UNARY_INT, ids=[UNARY_IDS[[u for u, _, _ in UNARY].index(u)] for u, _, _ in UNARY_INT])
def test_unary_ufunc_int(uf, lo, hi):
    name = UNARY_IDS[[u for u, _, _ in UNARY].index(uf)]
    same(UNARY_FNS[name], unary_input(name, -9, 9, (4, 5), I32))
    if name in ("negative", "sign", "sqrt", "rint", "reciprocal"):
        same(UNARY_FNS[name], unary_input(name, -9, 9, (4, 5), I64))


@pytest.mark.parametrize("name", ["logical_not", "isnan", "isfinite", "absolute", "square", "floor"])
def test_unary_ufunc_bool(name):
    same(UNARY_FNS[name], rand((3, 3), bool))


def binary_inputs(name, da, db, shape):
    fa, fb = np.dtype(da).kind == "f", np.dtype(db).kind == "f"
    a, b = rand(shape, da, -10 if fa else -20, 10 if fa else 20), rand(shape, db, -10 if fb else -6, 10 if fb else 6)
    if name in ("divide", "true_divide", "floor_divide", "mod", "remainder"):
        b = np.where(np.abs(b) < 0.5, 3, b).astype(db)  # integer division by zero: see test_errors
    if name == "power":
        a = rand(shape, da, 0.1, 10) if fa else rand(shape, da, -6, 6)
        b = rand(shape, db, -3, 3) if fb else rand(shape, db, 0, 5)
    return a, b


@pytest.mark.parametrize("name", BINARY_IDS)
@pytest.mark.parametrize("da,db", [(F64, F64), (F32, F32), (I32, I32)])
def test_binary_ufunc(name, da, db):
    f = BINARY_FNS[name]
    same(f, *binary_inputs(name, da, db, (3, 5)))
    if da == db and da in (F64, F32):
        with np.errstate(all="ignore"):
            a, b = np.repeat(SPECIAL.ravel(), 16).reshape(16, 16), np.tile(SPECIAL.ravel(), 16).reshape(16, 16)
        same(f, a.astype(da), b.astype(db))


@pytest.mark.parametrize("name", BINARY_IDS)
def test_binary_ufunc_broadcasting_and_mixed(name):
    f = BINARY_FNS[name]
    a, b = binary_inputs(name, F64, F64, (4, 5))
    same(f, a[:, :1].copy(), b[:1].copy())  # (4, 1) with (1, 5)
    same(f, a[:1].copy(), b[:, :1].copy())
    same(f, a[:1, :1].copy(), np.zeros((0, 5)))
    same(f, *binary_inputs(name, I32, F32, (2, 3)))  # NumPy 2: float64
    # strided access is shared by all ufuncs: representatives only
    if name in ("add", "floor_divide", "mod", "power", "arctan2", "fmax", "less", "logical_xor"):
        same(f, a.T, b.T)
        same(f, a[::-1, ::2], b[::-1, ::2])
    # bool operands: NumPy raises for subtract, gives float16 for the transcendental ones
    if name in ("add", "multiply", "divide", "maximum", "fmin", "equal", "less", "logical_and", "logical_or",
                "logical_xor", "power", "arctan2", "hypot"):
        same(f, rand((2, 2), bool), rand((2, 2), bool))


def test_binary_ufunc_shape_mismatch_raises_value_error():
    with pytest.raises(ValueError):
        J(BINARY_FNS["add"])(np.zeros((2, 3)), np.zeros((2, 4)))
    with pytest.raises(ValueError):
        J(BINARY_FNS["hypot"])(np.zeros((2, 3)), np.zeros((3, 2)))


def cmp_ops(a, b):
    return a == b, a != b, a < b, a <= b, a > b, a >= b


@pytest.mark.parametrize("da,db", [(F64, F64), (I32, F32)])
def test_comparison_operators(da, db):
    a, b = rand((4, 5), da, -2, 2), rand((4, 5), db, -2, 2)
    same(cmp_ops, a, b)
    same(cmp_ops, a[:, :1].copy(), b[:1].copy())
    if da == db:
        same(cmp_ops, SPECIAL, SPECIAL[::-1].copy())


def round_decimals(a):
    return np.round(a, 2), np.round(a, 0), np.round(a, 3)


def round_negative_decimals(a):
    return np.round(a, -1)


def test_round_decimals():
    same(round_decimals, rand((20,), F64, -1000, 1000))
    same(round_negative_decimals, rand((20,), F64, -1000, 1000))


def round_half_even(a):
    return np.round(a), np.rint(a), a.round()


def test_round_is_half_to_even():
    same(round_half_even, np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5]))


def ufunc_with_scalars(a):
    return np.maximum(a, 0), np.power(a, 2), np.arctan2(a, 1.0), np.hypot(3, a), np.add(a, 1.5), np.fmin(a, 2)


@pytest.mark.parametrize("dtype", [F64, F32, I32])
def test_ufuncs_with_literal_scalars_follow_nep50(dtype):
    same(ufunc_with_scalars, rand((6,), dtype))


# ================================================================ where, clip


def w_where(c, a, b):
    return np.where(c, a, b)


def w_where_scalar(a):
    return np.where(a > 0, a, 0)


def w_where_float_scalar(a):
    return np.where(a > 0, a, 0.5)


def w_where_two_scalars(a):
    return np.where(a > 0, 1, -1)


@pytest.mark.parametrize("dtype", [F64, F32, I64, I32])
def test_where(dtype):
    a, b = rand((3, 4), dtype), rand((3, 4), dtype)
    same(w_where, a > b, a, b)
    same(w_where, rand((3, 4), bool), a, b)
    same(w_where, np.zeros((0, 4), bool), np.zeros((0, 4), dtype), np.zeros((0, 4), dtype))
    same(w_where_scalar, a)
    same(w_where_float_scalar, a)
    same(w_where_two_scalars, a)
    if dtype == F64:
        same(w_where, rand((4,), bool), a, b)  # the condition broadcasts
        same(w_where, rand((3, 1), bool), a[:, :1], rand((4,), I32))
        same(w_where, (a > 0).T, a.T, b[::-1].T)


def test_where_nan():
    same(w_where, np.isnan(SPECIAL), np.zeros_like(SPECIAL), SPECIAL)


def k_clip(a, lo, hi):
    return np.clip(a, lo, hi)


def k_clip_lit(a):
    return np.clip(a, -1, 2)


def k_clip_method(a):
    return a.clip(0, 3)


@pytest.mark.parametrize("dtype", [F64, F32, I64, I32])
def test_clip(dtype):
    a = rand((4, 5), dtype)
    same(k_clip_lit, a)
    same(k_clip_method, a)
    same(k_clip_lit, a.T)
    lo, hi = rand((5,), dtype, -5, 0), rand((4, 1), dtype, 0, 5)
    same(k_clip, a, lo, hi)
    same(k_clip_lit, np.zeros((0, 2), dtype))


def test_clip_scalar_arguments_and_nan():
    same(k_clip, SPECIAL, -1.0, 1.0)
    same(k_clip, rand((3, 7)), -0.5, 0.5)


# ================================================================ dot, matmul, outer


def m_dot(a, b):
    return np.dot(a, b)


def m_matmul(a, b):
    return np.matmul(a, b)


def m_at(a, b):
    return a @ b


def m_dot_method(a, b):
    return a.dot(b)


def m_outer(a, b):
    return np.outer(a, b)


MATMULS = [m_dot, m_matmul, m_at, m_dot_method]


@pytest.mark.parametrize("f,dtype", [(m_dot, F64), (m_dot, I32), (m_at, F32), (m_at, I64), (m_matmul, F64),
                                     (m_dot_method, F64)],
                         ids=lambda x: getattr(x, "__name__", str(x)))
def test_dot_matmul_shapes(f, dtype):
    tol = dict(rtol=1e3 * float(np.finfo(dtype).eps), atol=1e3 * float(np.finfo(dtype).eps)) \
        if np.dtype(dtype).kind == "f" else {}
    A, B = rand((3, 4), dtype), rand((4, 5), dtype)
    v, w = rand((4,), dtype), rand((3,), dtype)
    same(f, A, B, **tol)   # 2-D @ 2-D
    same(f, A, v, **tol)   # 2-D @ 1-D
    same(f, w, A, **tol)   # 1-D @ 2-D
    same(f, v, v[::-1], **tol)   # 1-D @ 1-D: a scalar
    same(f, A.T[::-1], w, **tol)
    same(f, rand((1, 1), dtype), rand((1, 1), dtype), **tol)


@pytest.mark.parametrize("f", MATMULS, ids=lambda f: f.__name__)
def test_dot_matmul_mixed_dtypes_and_empty(f):
    same(f, rand((2, 3), I32), rand((3, 2), F32), rtol=1e-12)
    same(f, rand((3,), I64), rand((3,), F64), rtol=1e-12)
    same(f, np.zeros((2, 0)), np.zeros((0, 3)))
    same(f, np.zeros(0, I32), np.zeros(0, I32))


@pytest.mark.parametrize("f", MATMULS, ids=lambda f: f.__name__)
def test_dot_matmul_mismatch_raises_value_error(f):
    with pytest.raises(ValueError):
        J(f)(np.zeros((2, 3)), np.zeros((4, 2)))
    with pytest.raises(ValueError):
        J(f)(np.zeros(3), np.zeros(4))


@pytest.mark.parametrize("da,db", [(F64, F64), (I32, I32), (F32, I64), (F32, F32)])
def test_outer(da, db):
    a, b = rand((4,), da), rand((3,), db)
    same(m_outer, a, b)
    same(m_outer, a[::-2], b[::-1])
    same(m_outer, np.zeros(0, da), b)
    same(m_outer, SPECIAL.ravel(), SPECIAL.ravel()[:3].copy())


# ================================================================ astype and methods


def t_astype_f32(a):
    return a.astype(np.float32)


def t_astype_f64(a):
    return a.astype(np.float64)


def t_astype_i32(a):
    return a.astype(np.int32)


def t_astype_i64(a):
    return a.astype(np.int64)


def t_astype_bool(a):
    return a.astype(bool)


def t_astype_u8(a):
    return a.astype(np.uint8)


@pytest.mark.parametrize("dtype", [F64, F32, I64, I32, bool])
def test_astype(dtype):
    a = rand((3, 4), dtype, -100, 100)
    for f in (t_astype_f32, t_astype_f64, t_astype_i32, t_astype_i64, t_astype_bool):
        r = same(f, a)
        assert r.flags.c_contiguous
        same(f, np.zeros((0, 3), dtype))
        if dtype in (F64, I32):
            r = same(f, a.T)
            assert r.flags.c_contiguous


def test_astype_truncates_toward_zero():
    a = np.array([-2.7, -1.5, -0.5, 0.0, 0.5, 1.5, 2.7, 99.99])
    same(t_astype_i32, a)
    same(t_astype_i64, a)
    same(t_astype_u8, np.array([0.0, 1.9, 200.5, 255.0]))
    same(t_astype_bool, np.array([0.0, -0.0, 1e-300, np.nan, -1.0]))


def meth_all(a):
    return (a.sum(axis=0), a.prod(axis=1), a.mean(axis=0), a.min(axis=1), a.max(), a.argmin(axis=0), a.argmax(),
            a.all(axis=0), a.any(axis=1), a.std(ddof=1), a.var(axis=0), a.cumsum(axis=1), a.cumprod(),
            a.sum(axis=1, keepdims=True), a.max(axis=0, keepdims=True))


def meth_views(a):
    return a.copy(), a.reshape(-1), a.ravel(), a.flatten(), a.transpose(), a.T, a.round(), a.clip(-1, 1)


@pytest.mark.parametrize("dtype", [F64, F32, I64, I32])
def test_array_methods(dtype):
    a = rand((3, 4), dtype, -3, 3)
    tol = dict(rtol=50 * ulps(dtype), atol=50 * ulps(dtype)) if np.dtype(dtype).kind == "f" else {}
    same(meth_all, a, **tol)
    same(meth_views, a)
    if dtype == F64:
        same(meth_all, a.T, **tol)
        same(meth_views, a[::-1, ::2])


# ================================================================ fancy indexing (reading)


def x_mask_pos(a):
    return a[a > 0]


def x_mask(a, m):
    return a[m]


def x_mask_expr(a, b):
    return a[(b > 0) & (a < 2)] * 2


def x_idx(a, idx):
    return a[idx]


def x_idx2(m, i, j):
    return m[i, j]


def x_idx_sum(a, idx):
    return a[idx].sum()


@pytest.mark.parametrize("dtype", [F64, F32, I64, I32])
def test_boolean_mask(dtype):
    a = rand((5, 6), dtype)
    same(x_mask_pos, a)
    same(x_mask_pos, -np.abs(a) - 1)  # nothing selected
    same(x_mask_pos, np.zeros((0, 3), dtype))
    same(x_mask, a, rand((5, 6), bool))
    same(x_mask_expr, a, rand((5, 6), dtype))
    if dtype == F64:
        same(x_mask_pos, a.T)
        same(x_mask_pos, a[::2, ::-1])
        same(x_mask_pos, a[0])
        same(x_mask, a[1], rand((6,), bool))


def test_boolean_mask_nan():
    same(x_mask_pos, SPECIAL)
    same(x_mask, SPECIAL, ~np.isnan(SPECIAL))


def test_boolean_mask_shape_mismatch_raises_index_error():
    with pytest.raises(IndexError):
        J(x_mask)(np.zeros(4), np.ones(5, bool))


def x_mask_store_pos(a):
    a[a < 0] = 0
    return a


def x_mask_store(a, m, v):
    a[m] = v
    return a


def x_mask_store_twice(a, b):
    a[b > 0.5] = 2.5
    a[a > 2] = -1
    return a.sum()


@pytest.mark.parametrize("dtype", [F64, F32, I64, I32, np.uint8])
def test_assignment_through_a_boolean_mask(dtype):
    """a[mask] = scalar writes where the mask is set, in place, as NumPy does (the value cast to a's dtype)."""
    a = rand((5, 6), dtype, -5, 5) if np.dtype(dtype).kind != "u" else rand((5, 6), dtype, 0, 9)
    same(x_mask_store_pos, a.copy())
    same(x_mask_store, a.copy(), rand((5, 6), bool), 7)
    same(x_mask_store, a.copy(), rand((5, 6), bool), 2.75)  # a float into an int array truncates, as NumPy
    same(x_mask_store, a.copy(), np.zeros((5, 6), bool), 1)  # nothing selected
    same(x_mask_store, np.zeros((0, 4), dtype), np.zeros((0, 4), bool), 1)
    if dtype == F64:
        same(x_mask_store, a.copy().T, rand((6, 5), bool), -3.5)        # a transposed view
        same(x_mask_store, a.copy()[::2, ::-1], rand((3, 6), bool), 9)  # a strided view
        same(x_mask_store, SPECIAL.copy(), np.isnan(SPECIAL), 0.0)
        same(x_mask_store_twice, a.copy(), rand((5, 6), F64, 0, 1))
        same(x_mask_store, rand((6,), bool), rand((6,), bool), False)


def test_assignment_through_a_mask_changes_the_callers_array():
    a = np.array([-1.0, 2.0, -3.0])
    J(x_mask_store_pos)(a)
    np.testing.assert_array_equal(a, [0.0, 2.0, 0.0])


def test_assignment_through_a_mask_of_another_shape_raises_numpys_index_error():
    with pytest.raises(IndexError) as numpy_error:
        x_mask_store(np.zeros(4), np.ones(5, bool), 1.0)
    with pytest.raises(IndexError) as ours:
        J(x_mask_store)(np.zeros(4), np.ones(5, bool), 1.0)
    assert str(ours.value).splitlines()[0] == str(numpy_error.value)


def x_idx_store(a, idx, v):
    a[idx] = v
    return a


def x_idx_store_overlapping(a, idx):
    a[idx] = a[0:3]
    return a


def x_idx_store_own_values(a):
    a[a[:3]] = 9
    return a


def x_mask_store_own_reversed(a):
    a[a[::-1]] = False
    return a


@pytest.mark.parametrize("dtype", [F64, F32, I64, I32, np.uint8])
@pytest.mark.parametrize("idt", [I64, I32])
def test_assignment_through_an_integer_index_array(dtype, idt):
    """a[idx] = v for 1-D a and idx: negative indices wrap, a repeated index takes the last value, v is a scalar,
    an array of idx's length or of length 1; results as NumPy's."""
    a = rand((9,), dtype, 0, 9)
    same(x_idx_store, a.copy(), np.array([0, 3, -1, 3], idt), 5)
    same(x_idx_store, a.copy(), np.array([0, 3, -1, 3], idt), np.array([1, 2, 3, 4], dtype))
    same(x_idx_store, a.copy(), np.array([2, 2], idt), np.array([6.75]))  # cast as NumPy casts
    same(x_idx_store, a.copy(), np.zeros(0, idt), 1)
    same(x_idx_store, a[::-2].copy(), np.array([1, 0], idt), np.array([7, 8], dtype))


def test_index_array_assignment_reads_a_copy_of_overlapping_operands():
    same(x_idx_store_overlapping, np.arange(6.0), np.array([1, 2, 3]))
    same(x_idx_store_own_values, np.array([2, 1, 0, 5, 4, 3]))
    same(x_mask_store_own_reversed, np.array([True, False, False, True, True, False]))


def test_index_array_assignment_errors_are_numpys():
    with pytest.raises(IndexError, match="index 9 is out of bounds for axis 0 with size 9"):
        J(x_idx_store)(np.zeros(9), np.array([1, 9]), 1.0)
    with pytest.raises(IndexError, match="index -10 is out of bounds"):
        J(x_idx_store)(np.zeros(9), np.array([-10]), 1.0)
    with pytest.raises(ValueError):  # 3 values for 2 places
        J(x_idx_store)(np.zeros(9), np.array([1, 2]), np.array([1.0, 2.0, 3.0]))
    # rows of a 2-D array (tests/test_scatter.py has the other forms); a 2-D index array is not supported
    assert J(x_idx_store)(np.zeros((3, 3)), np.array([1, 2]), 1.0).tolist() == x_idx_store(np.zeros((3, 3)), np.array([1, 2]), 1.0).tolist()
    with pytest.raises(lk.CompileError, match="index arrays of 2 dimensions is not supported"):
        J(x_idx_store)(np.zeros((3, 3)), np.array([[1, 2]]), 1.0)


def x_mask_store_array(a, m):
    a[m] = a[m] * 2
    return a


def x_mask_store_other(a, m, b):
    a[m] = b[m]
    return a


def x_mask_store_reversed_self(a, m):
    a[m] = a[::-1][m]
    return a


@pytest.mark.parametrize("dtype", [F64, F32, I64, I32])
def test_assignment_of_an_array_through_a_mask(dtype):
    """a[m] = values: the k-th set element (in C order) gets values[k], or values[0] when there is one value;
    values that are a view of a itself are read as they were before the assignment, as NumPy reads them."""
    a, b, m = rand((5, 6), dtype), rand((5, 6), dtype), rand((5, 6), bool)
    same(x_mask_store_array, a.copy(), m)
    same(x_mask_store_other, a.copy(), m, b)
    same(x_mask_store_other, a.copy().T, m.T, b.T)
    same(x_mask_store_reversed_self, a.copy()[0], m[0])
    same(x_mask_store, a.copy(), m, np.arange(m.sum()).astype(F64))  # cast as NumPy casts
    same(x_mask_store, a.copy(), m, np.array([3], dtype))


def test_assignment_of_the_wrong_number_of_values_through_a_mask_raises_numpys_value_error():
    a, m = np.zeros(5), np.array([True, False, True, False, True])
    with pytest.raises(ValueError) as numpy_error:
        x_mask_store(a.copy(), m, np.ones(2))
    with pytest.raises(ValueError) as ours:
        J(x_mask_store)(a, m, np.ones(2))
    assert str(ours.value).splitlines()[0] == str(numpy_error.value)
    assert not a.any()  # counted before anything is written


@pytest.mark.parametrize("dtype", [F64, I32])
@pytest.mark.parametrize("idt", [I64, I32])
def test_integer_array_index(dtype, idt):
    a = rand((7,), dtype)
    same(x_idx, a, np.array([0, 6, 3, 3, -1, -7], idt))
    same(x_idx, a[::-2], np.array([1, 0, 3], idt))
    same(x_idx, a, np.zeros(0, idt))
    same(x_idx, a, np.array([[0, 1], [2, -2]], idt))  # 2-D index: 2-D result
    same(x_idx_sum, a, np.array([2, 2, 5], idt))
    m = rand((4, 5), dtype)
    same(x_idx2, m, np.array([0, 3, -1], idt), np.array([4, 0, 2], idt))
    same(x_idx2, m.T, np.array([1, 2], idt), np.array([3, 0], idt))


@pytest.mark.parametrize("dtype", [F64, I32])
def test_integer_array_index_selects_rows_of_2d(dtype):
    m = rand((4, 5), dtype)
    same(x_idx, m, np.array([3, 0, -1]))
    same(x_idx, m.T, np.array([4, 4]))


def test_integer_array_index_out_of_bounds_raises_index_error():
    with pytest.raises(IndexError):
        J(x_idx)(np.zeros(5), np.array([0, 5]))
    with pytest.raises(IndexError):
        J(x_idx)(np.zeros(5), np.array([-6]))
    with pytest.raises(IndexError):
        J(x_idx2)(np.zeros((3, 3)), np.array([0, 1]), np.array([0, 3]))


def test_fancy_index_result_is_a_copy():
    a = rand((6,))
    r = J(x_idx)(a, np.array([1, 2]))
    assert not np.shares_memory(r, a)
    r = J(x_mask_pos)(a)
    assert not np.shares_memory(r, a)


# ================================================================ comprehensions


def sq_plus(x):
    return x * x + 1


def g_of_i(i):
    return i * 0.5 - 3


def comp_fn(xs):
    return np.array([sq_plus(x) for x in xs])


def comp_expr(xs):
    return np.array([x * 2 - 1 for x in xs])


def comp_range(n):
    return np.array([g_of_i(i) for i in range(n)])


def comp_range_int(n):
    return np.array([i * i for i in range(n)])


def comp_range_start_step(n):
    return np.array([i for i in range(2, n, 3)])


def comp_closure(xs, s):
    return np.array([x * s for x in xs])


def comp_lambda(xs):
    f = lambda x: x - 1  # noqa: E731
    return np.array([f(x) for x in xs])


def comp_rows(X):
    return np.array([row.sum() for row in X])


def comp_if(xs):
    return np.array([x * 2 for x in xs if x > 0])


def comp_if_range(n):
    return np.array([i * i for i in range(n) if i % 3 == 0])


def comp_if_guarded_division(xs):
    return np.array([10 // x for x in xs if x != 0])


def comp_if_truthiness(xs):
    return np.array([x + 1 for x in xs if x], dtype=np.float32)


def comp_if_nested(n):
    return np.array([[j for j in range(i) if j > 0] for i in range(n)])


@pytest.mark.parametrize("dtype", [F64, F32, I64, I32])
def test_comprehension_with_if_keeps_the_items_whose_condition_holds(dtype):
    xs = rand((41,), dtype)
    same(comp_if, xs)
    same(comp_if, xs[::-3])
    nothing = J(comp_if)(-np.abs(xs) - 1)  # nothing kept: empty, of the items' type (NumPy's would be float64)
    assert nothing.shape == (0,) and nothing.dtype == (xs * 2).dtype
    same(comp_if_truthiness, xs)


def test_comprehension_with_if_over_range_and_guarded_item():
    for n in (1, 10, 31):
        same(comp_if_range, n)
    empty = J(comp_if_range)(0)
    assert empty.shape == (0,) and empty.dtype == np.int64  # the items' type (NumPy's empty list: float64)
    same(comp_if_guarded_division, np.array([0, 3, -2, 0, 7, 0]))  # 10 // 0 is never evaluated


def test_comprehension_with_if_in_a_nested_level_is_a_clear_compile_error():
    with pytest.raises(lk.CompileError, match="comprehension of one level only"):
        J(comp_if_nested)(4)


def comp_nested_range(n, m):
    return np.array([[i * m + j for j in range(m)] for i in range(n)])


def comp_matmul(X, Y):
    return np.array([[np.dot(row, col) for col in Y.T] for row in X])


def comp_of_rows_elementwise(X):
    return np.array([[x * 2 for x in row] for row in X])


@pytest.mark.parametrize("dtype", [F64, F32, I64, I32])
def test_comprehension_over_array(dtype):
    xs = rand((9,), dtype)
    same(comp_fn, xs)
    same(comp_expr, xs)
    same(comp_lambda, xs)
    same(comp_fn, xs[::-2])
    same(comp_expr, xs[:1])


def test_comprehension_closure_over_argument():
    same(comp_closure, rand((5,)), 2.5)
    same(comp_closure, rand((5,), I32), 3)


@pytest.mark.parametrize("n", [1, 2, 10])
def test_comprehension_over_range(n):
    same(comp_range, n)
    same(comp_range_int, n)
    same(comp_range_start_step, n + 5)


def test_comprehension_over_empty_range_has_no_elements():
    r = J(comp_range_int)(0)
    assert r.shape == (0,)
    r = J(comp_fn)(np.zeros(0))
    assert r.shape == (0,) and r.dtype == np.float64
    # CPython's np.array([[], []]) is float64 for want of elements; lorikeet types the elements (int64): shape only
    r = J(comp_nested_range)(2, 0)
    assert r.shape == (2, 0)


@pytest.mark.parametrize("dtype", [F64, I32])
def test_comprehension_over_rows(dtype):
    X = rand((4, 3), dtype)
    same(comp_rows, X)
    same(comp_rows, X.T)
    same(comp_of_rows_elementwise, X)
    same(comp_of_rows_elementwise, X[::-1, ::2])


@pytest.mark.parametrize("n,m", [(3, 4), (1, 1)])
def test_nested_comprehension_over_ranges(n, m):
    same(comp_nested_range, n, m)


@pytest.mark.parametrize("dtype", [F64, F32, I64])
def test_nested_comprehension_matmul_equals_matmul(dtype):
    X, Y = rand((5, 4), dtype), rand((4, 3), dtype)
    got = J(comp_matmul)(X, Y)
    tol = dict(rtol=1e3 * float(np.finfo(dtype).eps), atol=1e3 * float(np.finfo(dtype).eps)) \
        if np.dtype(dtype).kind == "f" else {}
    check(got, X @ Y, **tol)
    same(comp_matmul, X, Y, **tol)
    same(comp_matmul, Y.T, X.T, **tol)
