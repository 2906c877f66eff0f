"""The NumPy functions of issue 14 (item 6) that real kernels call, against NumPy itself: flip, diff, roll, tile,
scans and reductions along an axis given at run time, ufunc methods, sort and argsort, searchsorted, median and
percentile, unique, histogram, cov and corrcoef. Each test runs the same function under NumPy and under lorikeet
and compares dtype, shape and values, over dtypes, axes (negative ones too), empty arrays and non-contiguous
inputs, and checks that what NumPy refuses is refused (a CompileError where NumPy's error depends only on types
or constants, NumPy's exception class where it depends on values)."""
import numpy as np
import pytest

import lorikeet as lk
from helpers import J

RNG = np.random.default_rng(14)
DTYPES = [np.float64, np.float32, np.int64, np.int32, np.uint8, np.bool_]


def rand(shape, dtype=np.float64):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return RNG.uniform(-5, 5, shape).astype(dtype)
    if dtype.kind == "b":
        return RNG.random(shape) < 0.5
    if dtype.kind == "u":
        return RNG.integers(0, 200, shape).astype(dtype)
    return RNG.integers(-50, 50, shape).astype(dtype)


def check(got, exp, rtol=None):
    g, e = np.asarray(got), np.asarray(exp)
    assert g.dtype == e.dtype, f"dtype {g.dtype} != NumPy's {e.dtype}"
    assert g.shape == e.shape, f"shape {g.shape} != NumPy's {e.shape}"
    if e.dtype.kind == "f":
        tol = 8 * float(np.finfo(e.dtype).eps) if rtol is None else rtol
        np.testing.assert_allclose(g, e, rtol=tol, atol=tol, equal_nan=True)
    else:
        np.testing.assert_array_equal(g, e)


def same(fn, *args, rtol=None):
    with np.errstate(all="ignore"):
        exp = fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    got = J(fn)(*args)
    if isinstance(exp, tuple):
        assert isinstance(got, tuple) and len(got) == len(exp)
        for g, e in zip(got, exp):
            check(g, e, rtol)
    else:
        check(got, exp, rtol)
    return got


def raises_like(fn, *args):
    """lorikeet raises what NumPy raises (the same class) for these values."""
    with pytest.raises(Exception) as ref:
        fn(*args)
    with pytest.raises(ref.type):
        J(fn)(*args)


# ---------------- flip ----------------

def flip_all(a): return np.flip(a)
def flip0(a): return np.flip(a, 0)
def flip_last(a): return np.flip(a, axis=-1)
def flip_tuple(a): return np.flip(a, (0, 2))
def flipud(a): return np.flipud(a)
def fliplr(a): return np.fliplr(a)
def flip_then_sum(a): return np.flip(a, 1).cumsum(axis=1)


@pytest.mark.parametrize("dt", DTYPES)
def test_flip_every_axis(dt):
    a = rand((3, 4, 5), dt)
    for fn in (flip_all, flip0, flip_last, flip_tuple, flipud, fliplr):
        same(fn, a)
    same(flip_all, a[:, ::2, ::-1])
    same(flip0, rand((0, 3), dt))
    same(flip_then_sum, rand((3, 4)))


def test_flip_is_a_view():
    def f(a):
        v = np.flip(a)
        v[0] = 7.0
        return a
    a = np.arange(4.0)
    same(f, a)


def test_flip_bad_axis_is_a_compile_error():
    def f(a): return np.flip(a, 2)
    with pytest.raises(lk.CompileError, match="out of bounds"):
        J(f)(np.ones((2, 2)))
    with pytest.raises(lk.CompileError, match="at least 2"):
        J(fliplr)(np.ones(3))


# ---------------- diff ----------------

def diff1(a): return np.diff(a)
def diff2(a): return np.diff(a, 2)
def diff_axis0(a): return np.diff(a, axis=0)
def diff_n_axis(a): return np.diff(a, n=2, axis=-2)
def diff0(a): return np.diff(a, 0)
def diff_sum(a): return np.sum(np.diff(a) ** 2)


@pytest.mark.parametrize("dt", DTYPES)
def test_diff(dt):
    a = rand((4, 6), dt)
    for fn in (diff1, diff2, diff_axis0, diff_n_axis, diff0):
        same(fn, a)
    same(diff1, rand(7, dt)[::-2])
    same(diff1, rand((3, 1), dt))
    same(diff2, rand((3, 1), dt))     # n beyond the length: empty
    same(diff1, rand((0,), dt))
    same(diff_sum, rand(9, np.float64))


def test_diff_refusals():
    def neg(a): return np.diff(a, -1)
    def scalar(x): return np.diff(x)
    def prepend(a): return np.diff(a, 1, -1, 0.0)
    with pytest.raises(lk.CompileError, match="non-negative"):
        J(neg)(np.ones(3))
    with pytest.raises(lk.CompileError, match="at least one dimensional"):
        J(scalar)(1.0)
    with pytest.raises(lk.CompileError, match="prepend"):
        J(prepend)(np.ones(3))


# ---------------- roll ----------------

def roll_flat(a, s): return np.roll(a, s)
def roll_axis0(a, s): return np.roll(a, s, axis=0)
def roll_neg_axis(a, s): return np.roll(a, s, -1)
def roll_tuple(a, s): return np.roll(a, (s, -2 * s), axis=(0, 1))
def roll_repeated_axis(a, s): return np.roll(a, (s, 1), axis=(1, 1))
def roll_in_stencil(a): return np.roll(a, 1) + np.roll(a, -1) - 2 * a


@pytest.mark.parametrize("dt", DTYPES)
def test_roll(dt):
    a = rand((4, 5), dt)
    for s in (0, 1, -3, 7, -11, 20):
        for fn in (roll_flat, roll_axis0, roll_neg_axis, roll_tuple, roll_repeated_axis):
            same(fn, a, s)
        same(roll_flat, a.T, s)
        same(roll_flat, rand(6, dt)[::-1], s)
    same(roll_flat, rand((0, 3), dt), 2)
    same(roll_axis0, rand((0, 3), dt), 2)
    same(roll_neg_axis, rand((2, 0), dt), -1)
    same(roll_in_stencil, rand(10))


def test_roll_refusals():
    def float_shift(a): return np.roll(a, 1.5)
    def mismatch(a): return np.roll(a, (1, 2, 3), axis=(0, 1))
    with pytest.raises(lk.CompileError, match="integer"):
        J(float_shift)(np.ones(3))
    with pytest.raises(lk.CompileError, match="same length"):
        J(mismatch)(np.ones((2, 2)))


# ---------------- tile ----------------

def tile_int(a, r): return np.tile(a, r)
def tile_pair(a, r): return np.tile(a, (r, 2))
def tile_triple(a, r): return np.tile(a, (2, 1, r))


@pytest.mark.parametrize("dt", DTYPES)
def test_tile(dt):
    for a in (rand(3, dt), rand((2, 3), dt), rand((2, 2, 2), dt), rand((3, 4), dt)[::2, ::-1], rand((0, 2), dt)):
        for r in (0, 1, 3):
            for fn in (tile_int, tile_pair, tile_triple):
                same(fn, a, r)


def test_tile_of_a_scalar_and_errors():
    def scalar(x): return np.tile(x, 3)
    def scalar2(x): return np.tile(x, (2, 2))
    same(scalar, 2.5)
    same(scalar2, np.int32(4))
    raises_like(tile_int, np.ones(3), -1)
    def bad_reps(a): return np.tile(a, 1.5)
    with pytest.raises(lk.CompileError, match="reps"):
        J(bad_reps)(np.ones(3))


# ---------------- scans along an axis, and axes given at run time ----------------

def cumsum_axis0(a): return np.cumsum(a, axis=0)
def cumsum_neg(a): return np.cumsum(a, -1)
def cumprod_axis1(a): return a.cumprod(axis=1)


@pytest.mark.parametrize("dt", DTYPES)
def test_cumsum_and_cumprod_along_an_axis(dt):
    a = rand((3, 4, 2), dt)
    if np.dtype(dt).kind in "iu":
        a = a % 3
    for fn in (cumsum_axis0, cumsum_neg, cumprod_axis1):
        same(fn, a)
        same(fn, a[::-1, ::2])
        same(fn, rand((0, 3, 2), dt))


def red_var_axis(a, ax):
    return (np.sum(a, axis=ax), a.prod(ax), np.min(a, axis=ax), a.max(ax), np.mean(a, ax), np.argmax(a, axis=ax),
            a.argmin(ax), np.any(a, ax), np.all(a, axis=ax))


def red_var_axis_keepdims(a, ax):
    return np.sum(a, axis=ax, keepdims=True), np.std(a, axis=ax, ddof=1, keepdims=True), np.var(a, ax)


def scan_var_axis(a, ax):
    return np.cumsum(a, axis=ax), a.cumprod(ax)


def axis_in_a_loop(a):
    out = 0.0
    for ax in range(a.ndim):
        out += np.sum(a.max(axis=ax))
    return out


@pytest.mark.parametrize("dt", [np.float64, np.float32, np.int64, np.int8])
def test_reductions_along_an_axis_given_at_run_time(dt):
    a = rand((3, 4, 5), dt)
    if np.dtype(dt).kind in "iu":
        a = a % 4
    for ax in (0, 1, 2, -1, -2, -3):
        same(red_var_axis, a, ax, rtol=1e-5)
        same(red_var_axis_keepdims, a, ax, rtol=1e-5)
        same(scan_var_axis, a, ax, rtol=1e-5)
    for ax in (0, -1):
        same(red_var_axis, a[0, 0], ax, rtol=1e-5)
        same(scan_var_axis, a[0, 0], ax, rtol=1e-5)
    same(axis_in_a_loop, rand((2, 3, 4)))


def test_a_run_time_axis_out_of_bounds_is_numpys_axis_error():
    a = np.ones((2, 3))
    for ax in (2, -3, 100):
        with pytest.raises(np.exceptions.AxisError):
            np.sum(a, axis=ax)
        with pytest.raises(ValueError, match=f"axis {ax} is out of bounds for array of dimension 2"):
            J(red_var_axis)(a, ax)
        with pytest.raises(ValueError, match="out of bounds"):
            J(scan_var_axis)(a, ax)
    # what makes the reduction along the axis raise is the chosen axis alone
    e = np.ones((0, 3))
    same(lambda_min_axis, e, 1)
    with pytest.raises(ValueError):
        J(lambda_min_axis)(e, 0)


def lambda_min_axis(a, ax):
    return a.min(axis=ax)


def test_a_run_time_axis_must_be_an_integer():
    def f(a, ax): return a.sum(axis=ax)
    with pytest.raises(lk.CompileError, match="axis must be an integer"):
        J(f)(np.ones(3), 1.0)


# ---------------- sort and argsort ----------------

def sort_last(a): return np.sort(a)
def sort0(a): return np.sort(a, axis=0)
def sort_flat(a): return np.sort(a, axis=None)
def argsort_last(a): return np.argsort(a)
def argsort0(a): return a.argsort(axis=0)
def argsort_flat(a): return np.argsort(a, axis=None)


# lorikeet's sort is stable: its argsort is NumPy's kind="stable" one (NumPy's default kind may order ties otherwise)
STABLE = {argsort_last: lambda a: np.argsort(a, kind="stable"), argsort0: lambda a: a.argsort(axis=0, kind="stable"),
          argsort_flat: lambda a: np.argsort(a, axis=None, kind="stable")}


def same_sort(fn, a):
    if fn in STABLE:
        check(J(fn)(a), STABLE[fn](a))
    else:
        same(fn, a)
def sort_expr(a): return np.sort(a * 2)[::-1]


def with_specials(a):
    """a with NaN, infinities and signed zeros where its dtype has them, and repeated values."""
    a = a.copy()
    if a.dtype.kind == "f" and a.size >= 6:
        f = a.reshape(-1)
        f[0], f[1], f[2], f[3], f[4] = np.nan, np.inf, -np.inf, -0.0, 0.0
        f[5] = f[6 % f.size]
    return a


@pytest.mark.parametrize("dt", DTYPES + [np.float16, np.int8, np.uint64, np.int16, np.uint16, np.uint32])
def test_sort_and_argsort(dt):
    for shape in ((40,), (5, 7), (3, 4, 6), (0, 3), (3, 0), (1,), (300,)):
        a = with_specials(rand(shape, dt))
        for fn in (sort_last, sort_flat, argsort_last, argsort_flat, sort_expr):
            same_sort(fn, a)
            if a.ndim == 2:
                same_sort(fn, a.T)
                same_sort(fn, a[::2, ::-1])
        if a.ndim >= 2:
            same_sort(sort0, a)
            same_sort(argsort0, a)


def test_argsort_is_stable_as_numpys_stable_kind():
    a = RNG.integers(0, 4, 1000)
    check(J(argsort_last)(a), np.argsort(a, kind="stable"))
    f = RNG.integers(0, 3, (20, 50)).astype(np.float32)
    check(J(argsort0)(f), np.argsort(f, axis=0, kind="stable"))


def test_sort_in_place():
    def f(a):
        a.sort()
        return a
    def g(a):
        a[1].sort(axis=0)
        r = a.sort(axis=0)
        return r
    for a in (rand(50), rand((6, 5)), with_specials(rand((4, 5), np.float32))):
        same(f, a)
    a = rand((4, 5))
    exp = a.copy()
    g(exp)
    assert J(g)(a) is None
    check(a, exp)


def test_sort_refusals():
    def scalar(x): return np.sort(x)
    def quick(a): return np.sort(a, -1, None, None)
    def bad_axis(a): return np.sort(a, 3)
    with pytest.raises(lk.CompileError, match="scalar|needs an array"):
        J(scalar)(1.0)
    with pytest.raises(lk.CompileError, match="kind"):
        J(quick)(np.ones(3))
    with pytest.raises(lk.CompileError, match="out of bounds"):
        J(bad_axis)(np.ones((2, 2)))


# ---------------- median, percentile, quantile ----------------

def median_flat(a): return np.median(a)
def median_axis(a): return np.median(a, axis=-1), np.median(a, 0)
def pct(a, q): return np.percentile(a, q)
def pct_axis(a, q): return np.percentile(a, q, axis=1)
def quant(a, q): return np.quantile(a, q), np.quantile(a, q, axis=0)
def pct_strong_q(a): return np.percentile(a, np.float64(40.0))


@pytest.mark.parametrize("dt", [np.float64, np.float32, np.float16, np.int64, np.int32, np.uint8, np.bool_])
def test_median(dt):
    for shape in ((7,), (8,), (1,), (5, 6), (4, 7), (3, 1)):
        a = rand(shape, dt)
        same(median_flat, a, rtol=1e-3 if dt == np.float16 else None)
        if a.ndim == 2:
            same(median_axis, a, rtol=1e-3 if dt == np.float16 else None)
            same(median_flat, a.T)


def test_median_nan_and_empty():
    a = rand((4, 6))
    a[1, 2] = np.nan
    same(median_flat, a)
    same(median_axis, a)
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        exp = np.median(np.ones(0))
    assert np.isnan(exp) and np.isnan(J(median_flat)(np.ones(0)))


@pytest.mark.parametrize("dt", [np.float64, np.float32, np.int64, np.int16, np.uint8])
def test_percentile_and_quantile(dt):
    for shape in ((9,), (10,), (1,), (4, 7)):
        a = rand(shape, dt)
        for q in (0, 0.5, 25, 33.3, 50, 62.5, 99.9, 100):
            same(pct, a, q, rtol=1e-5)
            same(quant, a, q / 100, rtol=1e-5)
            if a.ndim == 2:
                same(pct_axis, a, q, rtol=1e-5)
        same(pct_strong_q, a)
    b = rand(11)
    b[4] = np.nan
    same(pct, b, 30.0)


def test_percentile_errors():
    raises_like(pct, np.ones(5), 101.0)
    raises_like(pct, np.ones(5), -1)
    raises_like(quant, np.ones(5), 1.5)
    raises_like(pct, np.ones(0), 50.0)   # IndexError: nothing to interpolate
    def qarr(a, q): return np.percentile(a, q)
    with pytest.raises(lk.CompileError, match="q must be a number"):
        J(qarr)(np.ones(3), np.ones(2))


# ---------------- unique ----------------

def unique(a): return np.unique(a)


@pytest.mark.parametrize("dt", DTYPES + [np.float16, np.int8])
def test_unique(dt):
    for shape in ((50,), (6, 7), (0,), (1,)):
        a = rand(shape, dt)
        if np.dtype(dt).kind in "iuf":
            a = (a % 5).astype(dt)
        same(unique, a)
        if a.ndim == 2:
            same(unique, a.T)
    f = np.array([np.nan, 1.0, np.nan, -0.0, 0.0, 1.0, np.inf, np.nan])
    same(unique, f)


def test_unique_options_are_refused():
    def counts(a): return np.unique(a, return_counts=True)
    with pytest.raises(lk.CompileError, match="return_counts"):
        J(counts)(np.ones(3))


# ---------------- searchsorted ----------------

def ss_left(a, v): return np.searchsorted(a, v)
def ss_right(a, v): return np.searchsorted(a, v, side="right")
def ss_both(a, v): return np.searchsorted(a, v, side="left"), np.searchsorted(a, v, side="right")


@pytest.mark.parametrize("dt", [np.float64, np.float32, np.float16, np.int64, np.int32, np.uint8, np.bool_])
def test_searchsorted(dt):
    for n in (0, 1, 2, 7, 100):
        a = np.sort(with_specials(rand(n, dt)))
        v = with_specials(rand((3, 5), dt))
        for fn in (ss_left, ss_right, ss_both):
            same(fn, a, v)
            same(fn, a, v[0])
            same(fn, a[::-2][::-1].copy()[::2], v.T)
            same(fn, a, v[1, 2])            # a scalar: a NumPy int64
    # mixed dtypes compare in the common type, as NumPy's do
    same(ss_both, np.array([0, 1, 2, 3]), np.array([0.5, 1.0, 2.5, -1.0, 7.0]))
    same(ss_both, np.array([0.5, 1.5, 2.5]), np.array([0, 1, 2, 3]))
    same(ss_left, np.array([0.5, 1.5, 2.5]), 1)


def test_searchsorted_refusals():
    def sorter(a, v): return np.searchsorted(a, v, sorter=np.argsort(a))
    def two_d(a, v): return np.searchsorted(a, v)
    def bad_side(a, v): return np.searchsorted(a, v, side="middle")
    with pytest.raises(lk.CompileError, match="sorter"):
        J(sorter)(np.ones(3), 1.0)
    with pytest.raises(lk.CompileError, match="1-D"):
        J(two_d)(np.ones((2, 2)), 1.0)
    with pytest.raises(lk.CompileError, match="'left' and 'right'"):
        J(bad_side)(np.ones(3), 1.0)


# ---------------- the gpu backend's CUDA C for these functions (NVRTC, no GPU needed) ----------------

def test_the_kernels_compile_with_nvrtc_and_sorting_is_refused_in_kernels():
    tgc = pytest.importorskip("test_gpu_codegen")
    if tgc.NVRTC is None:
        pytest.skip("no NVRTC on this machine")
    f64, f32, i32 = rand((4, 6)), rand((4, 6), np.float32), rand((4, 6), np.int32)
    calls = [(flip_tuple, (rand((2, 3, 4)),)), (diff_n_axis, (f64,)), (roll_tuple, (i32, 2)), (roll_flat, (f32, -1)),
             (tile_pair, (f64[0], 3)), (red_var_axis, (f64, 1)), (scan_var_axis, (f32, -1)),
             (ss_both, (np.sort(f64[0]), f64)), (ss_both, (np.sort(rand(9, np.float16)), rand(4, np.float16))),
             (ss_left, (np.sort(i32[0]), i32)), (ss_left, (np.sort(rand(5, np.bool_)), rand(3, np.bool_))),
             (uf_reduce, (f32,)), (uf_accumulate, (f64,)), (uf_outer, (i32, i32[0])), (uf_logical, (f64,))]
    tgc.check_compiles([lk.jit(fn).inspect_cuda(*args) for fn, args in calls])

    def sort_rows(a):
        out = np.empty_like(a)
        for i in lk.prange(a.shape[0]):
            out[i] = np.sort(a[i])
        return out
    with pytest.raises(lk.CompileError, match="sort|allocation"):
        lk.jit(sort_rows).inspect_cuda(f64)


# ---------------- ufunc methods ----------------

def uf_reduce(a):
    return (np.add.reduce(a), np.multiply.reduce(a, axis=-1), np.maximum.reduce(a, 1), np.minimum.reduce(a, axis=None),
            np.add.reduce(a, axis=0, keepdims=True))


def uf_accumulate(a):
    return np.add.accumulate(a), np.multiply.accumulate(a, axis=1), np.maximum.accumulate(a, 1), np.minimum.accumulate(a)


def uf_outer(a, b):
    return np.add.outer(a, b), np.multiply.outer(b, a), np.subtract.outer(a, a), np.maximum.outer(a[0], b), np.minimum.outer(b, 3)


def uf_logical(a):
    return np.logical_and.reduce(a > 0), np.logical_or.reduce(a > 2, axis=1)


def uf_reduce_axis(a, ax):
    return np.add.reduce(a, ax), np.maximum.reduce(a, axis=ax)


@pytest.mark.parametrize("dt", [np.float64, np.float32, np.int64, np.int8, np.uint16, np.bool_])
def test_ufunc_methods(dt):
    a = rand((4, 5), dt)
    if np.dtype(dt).kind in "iu":
        a = (a % 3).astype(dt)
    b = rand(3, dt)
    if np.dtype(dt).kind != "b":
        same(uf_reduce, a, rtol=1e-6)
        same(uf_reduce, a.T, rtol=1e-6)
        same(uf_accumulate, a, rtol=1e-6)
        same(uf_accumulate, a[::-1, ::2], rtol=1e-6)
        same(uf_outer, a, b, rtol=1e-6)
        for ax in (0, 1, -1):
            same(uf_reduce_axis, a, ax, rtol=1e-6)
    same(uf_logical, a)


def test_ufunc_methods_nan_and_empty():
    a = rand((3, 4))
    a[1, 2] = np.nan
    same(uf_reduce, a)
    same(uf_accumulate, a)
    e = np.ones((0, 3))
    def add_red(a): return np.add.reduce(a), np.add.accumulate(a)
    same(add_red, e)
    def max_red(a): return np.maximum.reduce(a)
    raises_like(max_red, e)


def test_ufunc_methods_refusals():
    def at(a): return np.add.at(a, 0, 1.0)
    def nothing(a): return np.foo.bar(a)
    def dtype_kw(a): return np.add.reduce(a, dtype=np.float32)
    def scalar(x): return np.add.reduce(x)
    for fn, msg in ((at, "numpy.add.at is not supported"), (nothing, "numpy.foo.bar is not supported"),
                    (dtype_kw, "'dtype' is not supported"), (scalar, "needs an array")):
        with pytest.raises(lk.CompileError, match=msg):
            J(fn)(np.ones(3) if fn is not scalar else 1.0)


# ---------------- histogram ----------------

def hist(a): return np.histogram(a)
def hist_n(a, n): return np.histogram(a, n)
def hist_range(a, n): return np.histogram(a, bins=n, range=(-1.0, 2.5))
def hist_range32(a): return np.histogram(a, 5, (np.float32(-1.5), np.float32(1.0)))
def hist_edges(a, e): return np.histogram(a, e)


def exactly(fn, *args):
    """fn under lorikeet gives NumPy's values bit for bit (counts and edges)."""
    exp, got = fn(*args), J(fn)(*args)
    for g, e in zip(got, exp):
        assert np.asarray(g).dtype == np.asarray(e).dtype
        np.testing.assert_array_equal(g, e)


@pytest.mark.filterwarnings("ignore:Converting input from bool")
@pytest.mark.parametrize("dt", [np.float64, np.float32, np.float16, np.int64, np.int8, np.uint8, np.bool_])
def test_histogram(dt):
    for shape in ((1000,), (20, 30), (1,), (0,), (5,)):
        a = rand(shape, dt)
        exactly(hist, a)
        for n in (1, 3, 13):
            exactly(hist_n, a, n)
            exactly(hist_range, a, n)
        exactly(hist_range32, a)
        exactly(hist_edges, a, np.array([-2, -1, 0, 0.5, 3.0]))
        exactly(hist_edges, a, np.array([-3, 0, 0, 2]))
    exactly(hist, np.full(7, 3.0, dt))   # equal ends widen by a half


def test_histogram_errors():
    raises_like(hist_n, np.ones(3), 0)
    raises_like(hist, np.array([1.0, np.nan]))
    raises_like(hist_edges, np.ones(3), np.array([1.0, 0.0]))
    def backwards(a): return np.histogram(a, 3, (2.0, 1.0))
    def infinite(a): return np.histogram(a, 3, (0.0, np.inf))
    raises_like(backwards, np.ones(3))
    raises_like(infinite, np.ones(3))
    def weights(a): return np.histogram(a, 3, None, False, a)
    def density(a): return np.histogram(a, density=True)
    for fn in (weights, density):
        with pytest.raises(lk.CompileError, match="density|weights"):
            J(fn)(np.ones(3))


# ---------------- cov and corrcoef ----------------

def cov(m): return np.cov(m)
def cov_cols(m): return np.cov(m, rowvar=False)
def cov_bias(m): return np.cov(m, bias=True)
def cov_ddof(m, d): return np.cov(m, ddof=d)
def cov_xy(x, y): return np.cov(x, y)
def corr(m): return np.corrcoef(m)
def corr_xy(x, y): return np.corrcoef(x, y)
def corr_cols(m): return np.corrcoef(m, rowvar=False)


@pytest.mark.filterwarnings("ignore:Degrees of freedom")
@pytest.mark.parametrize("dt", [np.float64, np.float32, np.int64, np.int16, np.bool_])
def test_cov_and_corrcoef(dt):
    m = rand((4, 25), dt)
    x, y = rand(25, dt), rand(25, dt)
    for fn in (cov, cov_bias, corr):
        same(fn, m, rtol=1e-12)
        same(fn, m[:, ::2], rtol=1e-12)
    for fn in (cov_cols, corr_cols):
        same(fn, m.T, rtol=1e-12)
    for d in (0, 2, 25, 30):
        same(cov_ddof, m, d, rtol=1e-12)
    same(cov_xy, x, y, rtol=1e-12)
    same(cov_xy, m, m[:2], rtol=1e-12)
    same(corr_xy, x, y, rtol=1e-12)


def test_cov_of_one_variable_is_a_scalar():
    x = rand(10)
    exp = np.cov(x)
    got = J(cov)(x)
    assert np.ndim(exp) == 0 and np.isscalar(got) and np.asarray(got).dtype == np.float64
    np.testing.assert_allclose(got, exp, rtol=1e-12)
    same(corr, x)
    same(corr, np.ones(5))    # 0 / 0: NaN, as NumPy


def test_corrcoef_nan_and_constant_rows():
    m = rand((3, 8))
    m[1, 4] = np.nan
    m[2] = 1.5
    with np.errstate(all="ignore"):
        same(corr, m, rtol=1e-12)
        same(cov, m, rtol=1e-12)


# ---------------- matrix products of stacks of matrices ----------------

def mm(a, b): return a @ b
def mm_fn(a, b): return np.matmul(a, b)
def mm_chain(a, b): return (a @ b).sum(axis=0) + 1


BATCHED = [((2, 3, 4), (2, 4, 5)), ((3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((4,), (2, 4, 5)),
           ((2, 3, 4), (4,)), ((0, 3, 4), (4, 2)), ((2, 3, 0), (2, 0, 5)), ((1, 3, 4), (6, 4, 1))]


@pytest.mark.parametrize("dt", [np.float64, np.float32, np.float16, np.int64, np.int8, np.bool_])
def test_batched_matmul(dt):
    for sa, sb in BATCHED:
        a, b = rand(sa, dt), rand(sb, dt)
        rtol = 1e-2 if dt == np.float16 else 1e-5 if dt == np.float32 else 1e-12
        same(mm, a, b, rtol=rtol)
        same(mm_fn, a, b, rtol=rtol)
    same(mm_chain, rand((3, 2, 4)), rand((3, 4, 2)), rtol=1e-12)
    same(mm, rand((2, 3, 4)).transpose(0, 2, 1), rand((2, 3, 5))[:, :, ::2], rtol=1e-12)


def test_batched_matmul_errors():
    for sa, sb in (((2, 3, 4), (2, 5, 5)), ((2, 3, 4), (3, 4, 5)), ((2, 3, 4), (5,)), ((4,), (2, 3, 5))):
        raises_like(mm, np.ones(sa), np.ones(sb))
    def dot3(a, b): return np.dot(a, b)
    with pytest.raises(lk.CompileError, match="numpy.dot of arrays with more than 2"):
        J(dot3)(np.ones((2, 2, 2)), np.ones((2, 2)))


# ---------------- np.linalg.norm ----------------

def norm_default(x): return np.linalg.norm(x)
def norm_fro(x): return np.linalg.norm(x, "fro"), np.linalg.norm(x, ord="fro", axis=(1, 0))
def norm_vec(v):
    return (np.linalg.norm(v, np.inf), np.linalg.norm(v, -np.inf), np.linalg.norm(v, 0), np.linalg.norm(v, 1),
            np.linalg.norm(v, 2), np.linalg.norm(v, 3), np.linalg.norm(v, 0.5), np.linalg.norm(v, -2))
def norm_mat(x): return np.linalg.norm(x, 1), np.linalg.norm(x, -1), np.linalg.norm(x, np.inf), np.linalg.norm(x, -np.inf)
def norm_axis(x): return np.linalg.norm(x, axis=1), np.linalg.norm(x, 1, 0), np.linalg.norm(x, np.inf, axis=-1)
def norm_3d(x): return np.linalg.norm(x, None, (0, 2)), np.linalg.norm(x, 1, (2, 0)), np.linalg.norm(x, axis=1)


@pytest.mark.parametrize("dt", [np.float64, np.float32, np.int64, np.int8, np.bool_])
def test_norm(dt):
    x, v = rand((4, 5), dt), rand(7, dt)
    rtol = 1e-5 if dt == np.float32 else 1e-12
    same(norm_default, x, rtol=rtol)
    same(norm_default, v, rtol=rtol)
    same(norm_fro, x, rtol=rtol)
    same(norm_vec, v, rtol=rtol)
    same(norm_mat, x, rtol=rtol)
    same(norm_mat, x.T, rtol=rtol)
    same(norm_axis, x, rtol=rtol)
    same(norm_3d, rand((2, 3, 4), dt), rtol=rtol)


def test_norm_edges():
    same(norm_vec, np.array([1.0, np.nan, -2.0]))
    e = np.zeros(0)
    def inf_norm(v): return np.linalg.norm(v, np.inf), np.linalg.norm(v), np.linalg.norm(v, 1)
    same(inf_norm, e)
    def nuc(x): return np.linalg.norm(x, "nuc")
    def two(x): return np.linalg.norm(x, 2)
    def three_d(x): return np.linalg.norm(x, 1)
    with pytest.raises(lk.CompileError, match="nuc"):
        J(nuc)(np.ones((2, 2)))
    with pytest.raises(lk.CompileError, match="singular values"):
        J(two)(np.ones((2, 2)))
    with pytest.raises(lk.CompileError, match="dimensions"):
        J(three_d)(np.ones((2, 2, 2)))


# ---------------- np.linalg: det, inv, solve, cholesky ----------------

def det(a): return np.linalg.det(a)
def inv(a): return np.linalg.inv(a)
def solve(a, b): return np.linalg.solve(a, b)
def chol(a): return np.linalg.cholesky(a)
def residual(a, b): return np.abs(a @ np.linalg.solve(a, b) - b).max()


@pytest.mark.parametrize("dt", [np.float64, np.float32, np.int64, np.int32])
def test_dense_linalg(dt):
    rtol = 1e-4 if dt == np.float32 else 1e-9
    for n in (1, 2, 5, 12):
        a = (rand((n, n), np.float64) + 8 * np.eye(n)).astype(dt)
        s = (a.astype(np.float64) @ a.T.astype(np.float64) + n * np.eye(n)).astype(dt)
        same(det, a, rtol=rtol)
        same(inv, a, rtol=rtol)
        same(inv, a.T, rtol=rtol)
        same(solve, a, rand(n, dt), rtol=rtol)
        same(solve, a, rand((n, 3), dt)[:, ::-1], rtol=rtol)
        same(chol, s, rtol=rtol)
    same(solve, rand((4, 4)) + 4 * np.eye(4), rand(4, np.float32), rtol=1e-9)   # float64 with float32: float64
    assert J(residual)(rand((30, 30)) + 30 * np.eye(30), rand(30)) < 1e-12


def test_dense_linalg_empty_and_singular():
    same(det, np.zeros((0, 0)))
    same(inv, np.zeros((0, 0)))
    same(det, np.ones((3, 3)), rtol=0)
    same(det, np.array([[0.0, 1.0], [1.0, 0.0]]))     # a row swap: -1
    for fn, args in ((inv, (np.ones((3, 3)),)), (solve, (np.zeros((2, 2)), np.ones(2))), (chol, (-np.eye(3),)),
                     (chol, (np.array([[1.0, 2.0], [2.0, 1.0]]),)), (inv, (np.ones((2, 3)),)),
                     (solve, (np.eye(3), np.ones(4))), (det, (np.ones((3, 2)),))):
        raises_like(fn, *args)
    with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
        J(inv)(np.zeros((2, 2)))


def test_dense_linalg_refusals():
    with pytest.raises(lk.CompileError, match="float16 is unsupported"):
        J(inv)(np.eye(2, dtype=np.float16))
    with pytest.raises(lk.CompileError, match="2-D"):
        J(det)(np.ones((2, 2, 2)))
    def svd(a): return np.linalg.svd(a)
    with pytest.raises(lk.CompileError, match="numpy.linalg.svd is not supported"):
        J(svd)(np.eye(2))


def test_gpu_sorts_and_factorises_on_host_copies():
    """On the gpu backend, a function that sorts or factorises beside its kernels, or on device arrays, copies the
    operand to the host, runs the host code there and copies the result back: NumPy's answers."""
    if lk.get_backend() != "gpu":
        pytest.skip("runs on the gpu backend (LORIKEET_BACKEND=gpu)")
    def median_rows(a): return np.median(a, axis=1) * 2.0
    def inv_plus(a): return np.linalg.inv(a) + a
    def sorted_cols(a): return np.sort(a[:, ::-1] * 1.5, axis=0), np.argsort(a.T, axis=1), np.unique(a > 0.5)
    def solve_det(a, b): return np.linalg.solve(a, b) * 2.0, np.linalg.det(a[::-1]), np.linalg.cholesky(a @ a.T)
    m = rand((4, 5))
    sq = rand((3, 3)) + 3 * np.eye(3)
    for args in ((m,), (lk.to_device(m),)):
        np.testing.assert_allclose(np.asarray(J(median_rows)(*args)), median_rows(m), rtol=1e-14)
        for g, w in zip(J(sorted_cols)(*args), sorted_cols(m)):
            np.testing.assert_array_equal(np.asarray(g), w)
    for args in ((sq,), (lk.to_device(sq),)):
        np.testing.assert_allclose(np.asarray(J(inv_plus)(*args)), inv_plus(sq), rtol=1e-12)
        got = J(solve_det)(args[0], np.arange(3.0) if len(args[0].shape) == 2 and isinstance(args[0], np.ndarray)
                          else lk.to_device(np.arange(3.0)))
        for g, w in zip(got, solve_det(sq, np.arange(3.0))):
            np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12)