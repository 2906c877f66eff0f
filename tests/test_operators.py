"""The data-parallel operators lk.map, lk.reduce, lk.scan, lk.imap, lk.ireduce and lk.outer_map, inside @lk.jit
functions and called from plain Python, against references written with Python loops, functools.reduce,
itertools.accumulate and np.frompyfunc over NumPy scalars (so each element follows NumPy 2's promotion rules).

Semantics tested (issue 3 and typespec/operators.c):
  map(fn, *xs)          fn at every point of the broadcast of xs; result dtype is fn's result type.
  map(fn, x, axis=k)    result[i] = fn(x[(:,)*k, i]): fn of each slice of x along axis k.
  reduce(fn, x, init, axis)  functools.reduce over all elements (axis=None) or along one axis; an empty input
                        with no init raises ValueError, with init gives init.
  scan(fn, x, axis)     inclusive running fn; axis=None scans the flattened array (like np.cumsum).
  imap(fn, shape)       array of fn(i, j, ...) over np.ndindex(shape).
  ireduce(fn, combine, shape, init)  functools.reduce(combine, (fn(*idx) for idx in ndindex(shape)), init).
  outer_map(fn, x, y)   result[i, j] = fn(x[i], y[j]).
"""
import functools
import itertools

import numpy as np
import pytest

import lorikeet as lk
from helpers import J

RNG = np.random.default_rng(20261122)
INT_DTYPES = [np.int64, np.int32]
FLOAT_DTYPES = [np.float64, np.float32]
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES


def rand(shape, dtype, lo=-5, hi=5):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return RNG.uniform(lo, hi, shape).astype(dtype)
    return RNG.integers(lo, hi, shape).astype(dtype)




def check(got, expected, rtol=None):
    """Same dtype, same shape, same values (NaN equal to NaN). Float comparisons allow a few ulp."""
    g, e = np.asarray(got), np.asarray(expected)
    assert g.dtype == e.dtype, f"dtype {g.dtype} != expected {e.dtype}"
    assert g.shape == e.shape, f"shape {g.shape} != expected {e.shape}"
    if e.dtype.kind == "f":
        if rtol is None:
            rtol = 1e-6 if e.dtype == np.float32 else 1e-13
        np.testing.assert_allclose(g, e, rtol=rtol, atol=0, equal_nan=True)
    else:
        np.testing.assert_array_equal(g, e)


# ---- references ----


def _result_dtype(fn, dtypes):
    return np.asarray(fn(*[np.dtype(d).type(1) for d in dtypes])).dtype


def ref_map(fn, *arrays):
    """fn at every point of the broadcast of arrays, on NumPy scalars (np.frompyfunc), in fn's result dtype."""
    arrays = [np.asarray(a) for a in arrays]
    dt = _result_dtype(fn, [a.dtype for a in arrays])
    shape = np.broadcast_shapes(*[a.shape for a in arrays])
    # indexing gives NumPy scalars (np.frompyfunc would pass Python floats: float32 arithmetic done in double)
    spread = np.broadcast_arrays(*arrays)
    out = np.empty(shape, dt)
    for idx in np.ndindex(shape):
        out[idx] = fn(*(a[idx] for a in spread))
    return out


def ref_map_axis(fn, x, axis):
    slices = [fn(s) for s in np.moveaxis(x, axis, 0)]
    return np.array(slices)


def ref_reduce(fn, x, init=None, axis=None):
    x = np.asarray(x)
    if axis is None:
        items = list(x.flat)
        return functools.reduce(fn, items) if init is None else functools.reduce(fn, items, init)
    moved = np.moveaxis(x, axis, -1)
    out = [ref_reduce(fn, moved[idx], init) for idx in np.ndindex(moved.shape[:-1])]
    if not out:
        dt = np.asarray(fn(x.dtype.type(1), x.dtype.type(1) if init is None else init)).dtype
        return np.zeros(moved.shape[:-1], dtype=dt)
    return np.array(out).reshape(moved.shape[:-1])


def ref_scan(fn, x, axis=None):
    x = np.asarray(x)
    if axis is None:
        items = list(itertools.accumulate(x.flat, fn))
        dt = _result_dtype(fn, [x.dtype, x.dtype]) if not items else None
        return np.array(items, dtype=dt) if items else np.zeros(0, dtype=dt)
    moved = np.moveaxis(x, axis, -1)
    dt = np.result_type(x.dtype, _result_dtype(fn, [x.dtype, x.dtype]))
    out = np.zeros(moved.shape, dtype=dt)
    for idx in np.ndindex(moved.shape[:-1]):
        row = list(itertools.accumulate(moved[idx], fn))
        if row:
            out[idx] = row
    return np.moveaxis(out, -1, axis)


def ref_imap(fn, shape):
    if isinstance(shape, int):
        shape = (shape,)
    items = [fn(*idx) for idx in np.ndindex(shape)]
    if not items:
        return np.zeros(shape, dtype=np.asarray(fn(*([0] * len(shape)))).dtype)
    return np.array(items).reshape(shape)


def ref_ireduce(fn, combine, shape, init):
    if isinstance(shape, int):
        shape = (shape,)
    return functools.reduce(combine, (fn(*idx) for idx in np.ndindex(shape)), init)


def ref_outer_map(fn, x, y):
    items = [[fn(a, b) for b in y] for a in x]
    if not items or not items[0]:
        dt = np.asarray(fn(x.dtype.type(1) if x.ndim == 1 else x[:1][0] if len(x) else np.ones(x.shape[1:], x.dtype),
                           y.dtype.type(1) if y.ndim == 1 else np.ones(y.shape[1:], y.dtype))).dtype
        return np.zeros((len(x), len(y)), dtype=dt)
    return np.array(items)


# ---- functions passed as values ----


def poly(x):
    return 3 * x * x - 2 * x + 1


def add(x, y):
    return x + y


def mul(x, y):
    return x * y


def absmax(x, y):
    if abs(x) > abs(y):
        return abs(x)
    return abs(y)


def row_norm2(r):
    return np.sum(r * r)


# ==== lk.map inside @lk.jit ====


def map_lambda(a):
    return lk.map(lambda x: x * 2 + 1, a)


def map_lambda2(a, b):
    return lk.map(lambda x, y: x * y - x, a, b)


def map_module_fn(a):
    return lk.map(poly, a)


def map_compare(a):
    return lk.map(lambda x: x > 0, a)


def map_nested_def_scalar_closure(a, s):
    def g(x):
        return x * s + 1

    return lk.map(g, a)


def map_nested_def_array_closure(a, b):
    first = b[0]

    def g(x):
        return x + b[len(b) - 1] * first

    return lk.map(g, a)


def map_lambda_array_closure(a, b):
    return lk.map(lambda x: x - b.sum(), a)


def map_nested_def_control_flow(a):
    def g(x):
        if x > 0:
            return x * x
        return -x

    return lk.map(g, a)


def map_axis0(a):
    return lk.map(lambda r: r.sum(), a, axis=0)


def map_axis1(a):
    return lk.map(lambda r: r.sum(), a, axis=1)


def map_axis_neg(a):
    return lk.map(row_norm2, a, axis=-1)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(0,), (1,), (17,), (3, 4), (1, 5), (2, 0)])
def test_map_lambda_in_jit(dtype, shape):
    a = rand(shape, dtype)
    check(J(map_lambda)(a), ref_map(lambda x: x * 2 + 1, a))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_map_module_function_in_jit(dtype):
    a = rand((4, 5), dtype)
    check(J(map_module_fn)(a), ref_map(poly, a))


def test_map_module_function_noncontiguous_in_jit():
    a = rand((6, 8), np.float64)
    check(J(map_module_fn)(a[::2, 1::3]), ref_map(poly, a[::2, 1::3]))
    check(J(map_module_fn)(a.T), ref_map(poly, a.T))
    check(J(map_module_fn)(a[0, ::-1]), ref_map(poly, a[0, ::-1]))


def test_map_bool_result_in_jit():
    a = rand((3, 7), np.float64)
    check(J(map_compare)(a), a > 0)


@pytest.mark.parametrize("da,db", [(np.float64, np.float64), (np.float32, np.float32), (np.int32, np.float32),
                                   (np.int64, np.int32), (np.float32, np.int64)])
def test_map_two_arrays_promotion_in_jit(da, db):
    a, b = rand((5, 3), da), rand((5, 3), db)
    check(J(map_lambda2)(a, b), ref_map(lambda x, y: x * y - x, a, b))


@pytest.mark.parametrize("sa,sb", [((4, 1), (5,)), ((1, 3), (2, 1)), ((3,), (3,)), ((2, 3), (1, 3)), ((0, 3), (3,)),
                                   ((1,), (6,))])
def test_map_broadcasting_in_jit(sa, sb):
    a, b = rand(sa, np.float64), rand(sb, np.float64)
    check(J(map_lambda2)(a, b), ref_map(lambda x, y: x * y - x, a, b))


def test_map_broadcast_mismatch_raises_value_error_in_jit():
    with pytest.raises(ValueError):
        J(map_lambda2)(np.ones(3), np.ones(4))


def test_map_noncontiguous_two_inputs_in_jit():
    a = rand((6, 6), np.float64)
    check(J(map_lambda2)(a.T, a[::-1]), ref_map(lambda x, y: x * y - x, a.T, a[::-1]))


@pytest.mark.parametrize("dtype,s", [(np.float64, 2.5), (np.float32, np.float32(1.5)), (np.int64, 3),
                                     (np.int32, np.int32(-2))])
def test_map_nested_def_closure_over_scalar_in_jit(dtype, s):
    a = rand((3, 4), dtype)
    check(J(map_nested_def_scalar_closure)(a, s), ref_map(lambda x: x * np.asarray(s)[()] + 1, a))


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.float32])
def test_map_nested_def_closure_over_array_in_jit(dtype):
    a, b = rand((4, 3), dtype), rand((5,), dtype)
    first = b[0]
    check(J(map_nested_def_array_closure)(a, b), ref_map(lambda x: x + b[len(b) - 1] * first, a))


def test_map_lambda_closure_over_array_in_jit():
    a, b = rand((7,), np.float64), rand((4,), np.float64)
    check(J(map_lambda_array_closure)(a, b), ref_map(lambda x: x - b.sum(), a))


@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_map_nested_def_with_control_flow_in_jit(dtype):
    a = rand((9,), dtype)

    def g(x):
        if x > 0:
            return x * x
        return -x

    check(J(map_nested_def_control_flow)(a), ref_map(g, a))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(3, 4), (1, 5), (4, 1), (0, 3)])
def test_map_axis_in_jit(dtype, shape):
    a = rand(shape, dtype)
    for f, axis in [(map_axis0, 0), (map_axis1, 1)]:
        exp = ref_map_axis(lambda r: r.sum(), a, axis)
        if exp.size == 0:
            exp = np.zeros(a.shape[axis], dtype=np.sum(a).dtype)
        check(J(f)(a), exp)


def test_map_axis_negative_and_noncontiguous_in_jit():
    a = rand((5, 6), np.float64)
    check(J(map_axis_neg)(a), ref_map_axis(row_norm2, a, -1))
    check(J(map_axis_neg)(a.T), ref_map_axis(row_norm2, a.T, -1))
    check(J(map_axis0)(a[::2, ::-1]), ref_map_axis(lambda r: r.sum(), a[::2, ::-1], 0))


def test_map_axis_3d_in_jit():
    a = rand((2, 3, 4), np.float64)
    check(J(map_axis1)(a), ref_map_axis(lambda r: r.sum(), a, 1))


# ==== lk.map from plain Python ====


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_map_lambda_from_python(dtype):
    a = rand((3, 5), dtype)
    check(lk.map(lambda x: x * 2 + 1, a), ref_map(lambda x: x * 2 + 1, a))


def test_map_module_function_from_python():
    a = rand((11,), np.float64)
    check(lk.map(poly, a), ref_map(poly, a))
    check(lk.map(poly, a[::-2]), ref_map(poly, a[::-2]))


def test_map_broadcast_from_python():
    a, b = rand((4, 1), np.float32), rand((3,), np.float32)
    check(lk.map(lambda x, y: x * y - x, a, b), ref_map(lambda x, y: x * y - x, a, b))


def test_map_nested_def_closure_over_scalar_from_python():
    s = 2.5
    a = rand((6,), np.float64)

    def g(x):
        return x * s + 1

    check(lk.map(g, a), ref_map(g, a))


def test_map_nested_def_closure_over_array_from_python():
    a, b = rand((6,), np.float64), rand((3,), np.float64)

    def g(x):
        return x + b[2]

    check(lk.map(g, a), ref_map(g, a))


def test_map_axis_from_python():
    a = rand((3, 4), np.int64)
    check(lk.map(lambda r: r.sum(), a, axis=1), ref_map_axis(lambda r: r.sum(), a, 1))
    check(lk.map(lambda r: r.max(), a, axis=0), ref_map_axis(lambda r: r.max(), a, 0))


def test_map_empty_from_python():
    a = np.zeros((0, 3), np.float32)
    check(lk.map(lambda x: x + 1, a), ref_map(lambda x: x + 1, a))


# ==== lk.reduce ====


def reduce_add(a):
    return lk.reduce(lambda x, y: x + y, a)


def reduce_add_init(a, init):
    return lk.reduce(lambda x, y: x + y, a, init)


def reduce_add_init_kw(a):
    return lk.reduce(add, a, init=10)


def reduce_mul_axis0(a):
    return lk.reduce(mul, a, axis=0)


def reduce_add_axis1(a):
    return lk.reduce(add, a, axis=1)


def reduce_add_axis_neg(a):
    return lk.reduce(add, a, axis=-1)


def reduce_absmax(a):
    return lk.reduce(absmax, a)


def reduce_init_axis(a, init):
    return lk.reduce(add, a, init, 0)


def reduce_closure(a, w):
    def wmax(x, y):
        return max(x, y * w[0])

    return lk.reduce(wmax, a)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(1,), (2,), (100,), (3, 4), (1, 1)])
def test_reduce_all_in_jit(dtype, shape):
    a = rand(shape, dtype)
    check(J(reduce_add)(a), ref_reduce(lambda x, y: x + y, a))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_reduce_nonassociative_looking_fn_in_jit(dtype):
    a = rand((13,), dtype)
    check(J(reduce_absmax)(a), ref_reduce(absmax, a))


def test_reduce_noncontiguous_in_jit():
    a = rand((6, 5), np.int64)
    check(J(reduce_add)(a.T), ref_reduce(add, a.T))
    check(J(reduce_add)(a[::2, ::-1]), ref_reduce(add, a[::2, ::-1]))


@pytest.mark.parametrize("dtype,init", [(np.float64, 0.5), (np.int64, 7), (np.float32, np.float32(2.0)),
                                        (np.int32, np.int32(3))])
def test_reduce_with_init_in_jit(dtype, init):
    a = rand((3, 5), dtype)
    check(J(reduce_add_init)(a, init), ref_reduce(add, a, np.asarray(init)[()]))


def test_reduce_with_init_keyword_in_jit():
    a = rand((6,), np.int64)
    check(J(reduce_add_init_kw)(a), ref_reduce(add, a, 10))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(3, 4), (1, 4), (4, 1), (0, 3)])
def test_reduce_axis_in_jit(dtype, shape):
    a = rand(shape, dtype, 1, 4)
    if shape[0] == 0:
        with pytest.raises(ValueError):  # no init: reducing an empty axis has no value
            J(reduce_mul_axis0)(a)
    else:
        check(J(reduce_mul_axis0)(a), ref_reduce(mul, a, axis=0))
    check(J(reduce_add_axis1)(a), ref_reduce(add, a, axis=1))
    check(J(reduce_add_axis_neg)(a), ref_reduce(add, a, axis=-1))


def test_reduce_axis_3d_and_noncontiguous_in_jit():
    a = rand((2, 3, 4), np.float64)
    check(J(reduce_add_axis1)(a), ref_reduce(add, a, axis=1))
    b = rand((5, 6), np.float64)
    check(J(reduce_add_axis1)(b.T), ref_reduce(add, b.T, axis=1))
    check(J(reduce_mul_axis0)(b[::-2]), ref_reduce(mul, b[::-2], axis=0))


def test_reduce_init_and_axis_in_jit():
    a = rand((3, 4), np.float64)
    check(J(reduce_init_axis)(a, 100.0), ref_reduce(add, a, 100.0, axis=0))
    e = np.zeros((0, 4))
    check(J(reduce_init_axis)(e, 100.0), np.full(4, 100.0))


def test_reduce_closure_over_array_in_jit():
    a, w = rand((9,), np.float64), np.array([0.5])
    check(J(reduce_closure)(a, w), ref_reduce(lambda x, y: max(x, y * w[0]), a))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_reduce_empty_without_init_raises_value_error_in_jit(dtype):
    with pytest.raises(ValueError):
        J(reduce_add)(np.zeros(0, dtype))
    with pytest.raises(ValueError):
        J(reduce_add)(np.zeros((3, 0), dtype))


def max_axis0(a):
    return np.max(a, axis=0)


def argmin_axis1(a):
    return np.argmin(a, axis=1)


def nanmax_axis0(a):
    return np.nanmax(a, axis=0)


def first_along_1(a):
    return lk.reduce(lambda x, y: x, a, axis=1)


@pytest.mark.parametrize("fn, axis", [(max_axis0, 0), (argmin_axis1, 1), (nanmax_axis0, 0), (first_along_1, 1)])
@pytest.mark.parametrize("shape", [(0, 0), (2, 0), (0, 2), (0, 0, 1)], ids=str)
def test_an_empty_axis_raises_even_when_the_result_is_empty(fn, axis, shape):
    # NumPy raises whenever the reduced axis is empty, also where no element of the result would reduce it
    # (np.max(np.empty((0, 0)), axis=0)); returning an empty array there was a silent wrong answer (fuzz
    # seed 923860)
    a = np.zeros(shape)
    if shape[axis] == 0:
        with pytest.raises(ValueError):
            fn(a) if fn is not first_along_1 else np.maximum.reduce(a, axis=axis)
        with pytest.raises(ValueError):
            J(fn)(a)
    else:
        assert J(fn)(a).shape == fn(a).shape


@pytest.mark.parametrize("dtype,init", [(np.float64, 4.5), (np.int64, -3)])
def test_reduce_empty_with_init_returns_init_in_jit(dtype, init):
    check(J(reduce_add_init)(np.zeros(0, dtype), init), np.asarray(init))
    check(J(reduce_add_init)(np.zeros((0, 5), dtype), init), np.asarray(init))


def test_reduce_nan_propagates_in_jit():
    a = np.array([1.0, np.nan, 3.0])
    check(J(reduce_add)(a), np.nan)
    check(J(reduce_add)(np.array([np.inf, 1.0, -np.inf])), np.nan)


# from plain Python


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_reduce_from_python(dtype):
    a = rand((4, 5), dtype)
    check(lk.reduce(lambda x, y: x + y, a), ref_reduce(lambda x, y: x + y, a))
    check(lk.reduce(mul, a, axis=1), ref_reduce(mul, a, axis=1))


def test_reduce_init_from_python():
    a = rand((8,), np.int64)
    check(lk.reduce(add, a, init=5), ref_reduce(add, a, 5))
    check(lk.reduce(add, a, 5, axis=0), ref_reduce(add, a, 5))


def test_reduce_empty_from_python():
    with pytest.raises(ValueError):
        lk.reduce(add, np.zeros(0))
    check(lk.reduce(add, np.zeros(0), 2.5), np.float64(2.5))
    check(lk.reduce(add, np.zeros(0, np.int64), init=0), np.int64(0))


def test_reduce_nested_def_from_python():
    k = 3

    def f(x, y):
        return x + k * y

    a = rand((6,), np.int64)
    check(lk.reduce(f, a), ref_reduce(f, a))


# ==== lk.scan ====


def scan_add(a):
    return lk.scan(lambda x, y: x + y, a)


def scan_mul_axis0(a):
    return lk.scan(mul, a, axis=0)


def scan_add_axis1(a):
    return lk.scan(add, a, axis=1)


def scan_max_axis_neg(a):
    return lk.scan(lambda x, y: max(x, y), a, axis=-1)


def scan_init(a):
    return lk.scan(add, a, init=10)


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(0,), (1,), (23,), (3, 4), (2, 0)])
def test_scan_flat_in_jit(dtype, shape):
    a = rand(shape, dtype)
    check(J(scan_add)(a), ref_scan(lambda x, y: x + y, a))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", [(3, 4), (1, 4), (4, 1), (0, 3), (3, 0)])
def test_scan_axis_in_jit(dtype, shape):
    a = rand(shape, dtype, 1, 4)
    check(J(scan_mul_axis0)(a), ref_scan(mul, a, axis=0))
    check(J(scan_add_axis1)(a), ref_scan(add, a, axis=1))
    check(J(scan_max_axis_neg)(a), ref_scan(lambda x, y: max(x, y), a, axis=-1))


def test_scan_noncontiguous_in_jit():
    a = rand((5, 6), np.float64)
    check(J(scan_add)(a.T), ref_scan(add, a.T))
    check(J(scan_add_axis1)(a[::-2, ::3]), ref_scan(add, a[::-2, ::3], axis=1))
    check(J(scan_mul_axis0)(a.T), ref_scan(mul, a.T, axis=0))


def test_scan_3d_axis_in_jit():
    a = rand((2, 3, 4), np.int32)
    check(J(scan_add_axis1)(a), ref_scan(add, a, axis=1))


def test_scan_with_init_in_jit():
    a = rand((5,), np.int64)
    check(J(scan_init)(a), np.array(list(itertools.accumulate(a.flat, add, initial=10))[1:]))


@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_scan_from_python(dtype):
    a = rand((3, 4), dtype)
    check(lk.scan(add, a), ref_scan(add, a))
    check(lk.scan(lambda x, y: x * y, a, axis=1), ref_scan(lambda x, y: x * y, a, axis=1))
    check(lk.scan(add, np.zeros(0, dtype)), ref_scan(add, np.zeros(0, dtype)))


def test_scan_with_init_from_python():
    a = rand((5,), np.int64)
    check(lk.scan(add, a, init=10), np.array(list(itertools.accumulate(a.flat, add, initial=10))[1:]))


# ==== lk.imap ====


def imap_1d(n):
    return lk.imap(lambda i: i * i - 3 * i, (n,))


def imap_1d_int_shape(n):
    return lk.imap(lambda i: i * 0.5, n)


def imap_2d(n, m):
    return lk.imap(lambda i, j: i * 10 + j, (n, m))


def imap_3d(n):
    return lk.imap(lambda i, j, k: i * 100 + j * 10 + k, (n, 2, 3))


def imap_closure(a, b):
    n = len(a)

    def g(i):
        return a[i] * b[n - 1 - i]

    return lk.imap(g, (n,))


def imap_2d_closure(m):
    return lk.imap(lambda i, j: m[j, i], (m.shape[1], m.shape[0]))


@pytest.mark.parametrize("n", [0, 1, 9])
def test_imap_1d_in_jit(n):
    check(J(imap_1d)(n), ref_imap(lambda i: i * i - 3 * i, (n,)))
    check(J(imap_1d_int_shape)(n), ref_imap(lambda i: i * 0.5, n))


@pytest.mark.parametrize("n,m", [(3, 4), (1, 1), (0, 3), (3, 0), (1, 5)])
def test_imap_2d_in_jit(n, m):
    check(J(imap_2d)(n, m), ref_imap(lambda i, j: i * 10 + j, (n, m)))


def test_imap_3d_in_jit():
    check(J(imap_3d)(2), ref_imap(lambda i, j, k: i * 100 + j * 10 + k, (2, 2, 3)))


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_imap_closure_over_arrays_in_jit(dtype):
    a, b = rand((7,), dtype), rand((7,), dtype)
    check(J(imap_closure)(a, b), ref_imap(lambda i: a[i] * b[6 - i], (7,)))


def test_imap_2d_closure_transpose_in_jit():
    m = rand((3, 5), np.float64)
    check(J(imap_2d_closure)(m), m.T.copy())
    check(J(imap_2d_closure)(m[::-1, ::2]), m[::-1, ::2].T.copy())


def test_imap_from_python():
    check(lk.imap(lambda i: i * 3, (5,)), ref_imap(lambda i: i * 3, (5,)))
    check(lk.imap(lambda i, j: i - j * 0.25, (3, 4)), ref_imap(lambda i, j: i - j * 0.25, (3, 4)))
    check(lk.imap(lambda i: i, (0,)), np.zeros(0, np.int64))


# ==== lk.ireduce ====


def ireduce_1d(n):
    return lk.ireduce(lambda i: i * i, lambda x, y: x + y, (n,), 0)


def ireduce_2d(n, m):
    return lk.ireduce(lambda i, j: i * 0.5 - j, lambda x, y: max(x, y), (n, m), -1e300)


def ireduce_dot(a, b):
    return lk.ireduce(lambda i: a[i] * b[i], add, (len(a),), 0.0)


@pytest.mark.parametrize("n", [0, 1, 10])
def test_ireduce_1d_in_jit(n):
    check(J(ireduce_1d)(n), ref_ireduce(lambda i: i * i, lambda x, y: x + y, (n,), 0))


@pytest.mark.parametrize("n,m", [(3, 4), (1, 1), (0, 2)])
def test_ireduce_2d_in_jit(n, m):
    check(J(ireduce_2d)(n, m), ref_ireduce(lambda i, j: i * 0.5 - j, max, (n, m), -1e300))


def test_ireduce_closure_over_arrays_in_jit():
    a, b = rand((12,), np.float64), rand((12,), np.float64)
    check(J(ireduce_dot)(a, b), ref_ireduce(lambda i: a[i] * b[i], add, (12,), 0.0))


def test_ireduce_from_python():
    check(lk.ireduce(lambda i: i * i, add, (6,), 0), ref_ireduce(lambda i: i * i, add, (6,), 0))
    check(lk.ireduce(lambda i, j: i * j, mul, (2, 3), 1), ref_ireduce(lambda i, j: i * j, mul, (2, 3), 1))
    check(lk.ireduce(lambda i: i, add, (0,), 7), 7)


# ==== lk.outer_map ====


def outer_sub(x, y):
    return lk.outer_map(lambda a, b: a - b, x, y)


def outer_rows_dot(x, y):
    return lk.outer_map(lambda r, c: np.dot(r, c), x, y)


def outer_closure(x, y, s):
    def g(a, b):
        return a * s + b

    return lk.outer_map(g, x, y)


@pytest.mark.parametrize("dx,dy", [(np.float64, np.float64), (np.int32, np.int32), (np.float32, np.int64),
                                   (np.int64, np.float32)])
@pytest.mark.parametrize("nx,ny", [(3, 4), (1, 1), (0, 3), (3, 0)])
def test_outer_map_1d_in_jit(dx, dy, nx, ny):
    x, y = rand((nx,), dx), rand((ny,), dy)
    check(J(outer_sub)(x, y), ref_outer_map(lambda a, b: a - b, x, y))


def test_outer_map_noncontiguous_in_jit():
    x, y = rand((10,), np.float64), rand((9,), np.float64)
    check(J(outer_sub)(x[::3], y[::-1]), ref_outer_map(lambda a, b: a - b, x[::3], y[::-1]))


@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_outer_map_of_rows_in_jit(dtype):
    x, y = rand((4, 5), dtype), rand((3, 5), dtype)
    check(J(outer_rows_dot)(x, y), ref_outer_map(lambda r, c: np.dot(r, c), x, y))
    check(J(outer_rows_dot)(x, y), x @ y.T)


def test_outer_map_closure_in_jit():
    x, y = rand((3,), np.float64), rand((4,), np.float64)
    check(J(outer_closure)(x, y, 2.0), ref_outer_map(lambda a, b: a * 2.0 + b, x, y))


def test_outer_map_from_python():
    x, y = rand((3,), np.int64), rand((5,), np.int64)
    check(lk.outer_map(lambda a, b: a * b, x, y), np.outer(x, y))
    X, Y = rand((2, 3), np.float64), rand((4, 3), np.float64)
    check(lk.outer_map(lambda r, c: np.dot(r, c), X, Y), ref_outer_map(lambda r, c: np.dot(r, c), X, Y))


# ==== operators composed ====


def compose_map_reduce(a, b):
    return lk.reduce(add, lk.map(lambda x, y: x * y, a, b))


def compose_scan_of_map(a):
    return lk.scan(add, lk.map(lambda x: x * x, a))


def compose_imap_of_reduce(m):
    return lk.imap(lambda i: lk.reduce(add, m[i]), (m.shape[0],))


def test_reduce_of_map_in_jit():
    a, b = rand((50,), np.float64), rand((50,), np.float64)
    check(J(compose_map_reduce)(a, b), ref_reduce(add, ref_map(mul, a, b)))


def test_scan_of_map_in_jit():
    a = rand((20,), np.int64)
    check(J(compose_scan_of_map)(a), ref_scan(add, a * a))


def test_imap_of_reduce_in_jit():
    m = rand((4, 6), np.float64)
    check(J(compose_imap_of_reduce)(m), np.array([ref_reduce(add, r) for r in m]))


def test_two_lambdas_with_the_same_parameters_on_one_line_are_told_apart():
    """From plain Python, a lambda's source is found by its line: on a line with two lambdas of the same
    parameters, each call must still run its own (not the first one's)."""
    m = np.arange(1.0, 6.0)
    add, big = lk.scan(lambda x, y: x + y, m), lk.scan(lambda x, y: max(x, y), m)  # noqa: E731
    np.testing.assert_array_equal(add, np.cumsum(m))
    np.testing.assert_array_equal(big, np.maximum.accumulate(m))
    plus, times = lambda x, y: x + y, lambda x, y: x * y  # noqa: E731
    assert lk.reduce(times, m) == 120.0 and lk.reduce(plus, m) == 15.0
