"""float16 arrays and scalars, computed as NumPy computes them: stored as IEEE binary16, each operation computed in
float32 on its exactly widened operands and rounded to float16 once (NumPy's float16 loops). Where NumPy's result is
defined per operation (arithmetic, comparisons, casts, rounding functions, a Python loop over np.float16 scalars)
the bits must be NumPy's; transcendental functions within 1 ulp of float16 (NumPy computes them in float32 with its
own SIMD code, lorikeet with libm's or libmvec's float functions)."""
import os

import numpy as np
import pytest

import lorikeet as lk
from helpers import J

RNG = np.random.default_rng(16)
# the suite's openmp pass (loops cut into chunks) and gpu pass (work items of threads and blocks, partial results
# combined in order): a float16 reduction or scan that rounds at every step rounds in another grouping
ON_TEAM = os.environ.get("LORIKEET_BACKEND") in ("openmp", "gpu")

# the largest finite, the smallest subnormal (6e-8), the smallest normal and its neighbour, signed zeros, inf, nan,
# values that round (1/3), integers
EDGE = np.array([0.0, -0.0, 1.0, -1.0, 65504.0, -65504.0, 6e-8, -6e-8, 2.0 ** -14, 2.0 ** -14 - 2.0 ** -24,
                 np.inf, -np.inf, np.nan, 0.5, 1 / 3, 1000.0, 3.0, -2.5], np.float16)


def halves(n, lo=-8.0, hi=8.0):
    return RNG.uniform(lo, hi, n).astype(np.float16)


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize])


def same_bits(got, want):
    """The same dtype and shape, NaN where NumPy has NaN, and every other element bit for bit (so -0.0 is not 0.0)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
        return
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    diff = np.flatnonzero(bits(got)[~nan] != bits(want)[~nan])
    assert diff.size == 0, f"{diff.size} elements differ: {got[~nan][diff[:5]]} vs NumPy's {want[~nan][diff[:5]]}"


def ulp_distance(got, want):
    """Units in the last place of float16 between two float16 arrays (NaN against NaN: 0)."""
    g, w = bits(np.asarray(got, np.float16)).astype(np.int64), bits(np.asarray(want, np.float16)).astype(np.int64)
    g = np.where(g & 0x8000, 0x8000 - g, g)  # sign-magnitude to a monotone integer line
    w = np.where(w & 0x8000, 0x8000 - w, w)
    d = np.abs(g - w)
    return int(np.where(np.isnan(got) & np.isnan(want), 0, d).max(initial=0))


def numpy(fn, *args):
    with np.errstate(all="ignore"):
        return fn(*args)


def grid():
    """Every pair of the edge values, and random pairs."""
    a, b = np.repeat(EDGE, EDGE.size), np.tile(EDGE, EDGE.size)
    return np.concatenate([a, halves(3001, -300, 300)]), np.concatenate([b, halves(3001, -300, 300)])


# ---------------------------------------------------------------- elementwise arithmetic, bit for bit

def add(a, b): return a + b
def sub(a, b): return a - b
def mul(a, b): return a * b
def div(a, b): return a / b
def floordiv(a, b): return a // b
def mod(a, b): return a % b
def power(a, b): return a ** b
def minimum(a, b): return np.minimum(a, b)
def maximum(a, b): return np.maximum(a, b)
def fmin(a, b): return np.fmin(a, b)
def fmax(a, b): return np.fmax(a, b)
def fmod(a, b): return np.fmod(a, b)
def copysign(a, b): return np.copysign(a, b)
def compares(a, b): return a == b, a != b, a < b, a <= b, a > b, a >= b


@pytest.mark.parametrize("fn", [add, sub, mul, div, floordiv, mod, minimum, maximum, fmin, fmax, fmod, copysign],
                         ids=lambda f: f.__name__)
def test_binary_operations_give_numpys_bits(fn):
    a, b = grid()
    same_bits(J(fn)(a, b), numpy(fn, a, b))
    same_bits(J(fn)(a[::-3], b[::-3]), numpy(fn, a[::-3], b[::-3]))  # strided


def test_comparisons_give_numpys_results():
    a, b = grid()
    for got, want in zip(J(compares)(a, b), numpy(compares, a, b)):
        same_bits(got, want)


def fused(a, b, c):
    return a * b + c


def fused_long(a, b, c):
    return (a - b) * (a + c) / (b * b + 1.5) - c


def test_each_operation_of_a_fused_map_rounds_as_numpy():
    """a * b + c is one loop, but each operation rounds to float16 as NumPy's two ufunc calls do."""
    a, b, c = halves(10_001, -200, 200), halves(10_001, -200, 200), halves(10_001)
    same_bits(J(fused)(a, b, c), numpy(fused, a, b, c))
    same_bits(J(fused_long)(a, b, c), numpy(fused_long, a, b, c))


def neg(a): return -a
def absolute(a): return abs(a)
def sqrt(a): return np.sqrt(a)
def floor(a): return np.floor(a)
def ceil(a): return np.ceil(a)
def trunc(a): return np.trunc(a)
def rint(a): return np.rint(a)
def square(a): return a * a
def reciprocal(a): return np.reciprocal(a)
def sign(a): return np.sign(a)


@pytest.mark.parametrize("fn", [neg, absolute, sqrt, floor, ceil, trunc, rint, square, reciprocal, sign],
                         ids=lambda f: f.__name__)
def test_exact_unary_functions_give_numpys_bits(fn):
    a = np.concatenate([EDGE, halves(5001, -3000, 3000)])
    same_bits(J(fn)(a), numpy(fn, a))


TRANSCENDENTAL = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "arcsin", "arccos",
                  "arctan", "sinh", "cosh", "tanh", "arcsinh", "arctanh", "cbrt", "degrees", "radians"]


def binary_math(a, b):
    return a ** b, np.arctan2(a, b), np.hypot(a, b), np.logaddexp(a, b), np.logaddexp2(a, b)


def transcendental(name):
    """np.<name>(a), defined in this file so that lorikeet reads its source."""
    return {"exp": lambda a: np.exp(a), "exp2": lambda a: np.exp2(a), "expm1": lambda a: np.expm1(a),
            "log": lambda a: np.log(a), "log2": lambda a: np.log2(a), "log10": lambda a: np.log10(a),
            "log1p": lambda a: np.log1p(a), "sin": lambda a: np.sin(a), "cos": lambda a: np.cos(a),
            "tan": lambda a: np.tan(a), "arcsin": lambda a: np.arcsin(a), "arccos": lambda a: np.arccos(a),
            "arctan": lambda a: np.arctan(a), "sinh": lambda a: np.sinh(a), "cosh": lambda a: np.cosh(a),
            "tanh": lambda a: np.tanh(a), "arcsinh": lambda a: np.arcsinh(a), "arctanh": lambda a: np.arctanh(a),
            "cbrt": lambda a: np.cbrt(a), "degrees": lambda a: np.degrees(a),
            "radians": lambda a: np.radians(a)}[name]


@pytest.mark.parametrize("name", TRANSCENDENTAL)
def test_transcendental_functions_within_one_ulp(name):
    a = np.concatenate([EDGE, halves(5001, -1, 1), halves(5001, -12, 12)])
    fn = transcendental(name)
    got, want = J(fn)(a), numpy(fn, a)
    assert got.dtype == np.float16 == want.dtype
    assert ulp_distance(got, want) <= 1


def test_two_argument_functions_within_one_ulp():
    a, b = grid()
    for got, want in zip(J(binary_math)(a, b), numpy(binary_math, a, b)):
        assert got.dtype == np.float16 == want.dtype
        assert ulp_distance(got, want) <= 1


# ---------------------------------------------------------------- casts

def to_half(a): return a.astype(np.float16)
def to_f32(a): return a.astype(np.float32)
def to_f64(a): return a.astype(np.float64)


CAST_DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
               np.float32, np.float64]


@pytest.mark.parametrize("dtype", CAST_DTYPES, ids=lambda d: np.dtype(d).name)
def test_casts_to_float16_round_to_nearest_even(dtype):
    info = np.finfo(dtype) if np.dtype(dtype).kind == "f" else None
    if dtype is np.bool_:
        a = np.array([True, False, True])
    elif info is None:
        lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
        a = np.concatenate([RNG.integers(lo, hi, 3000, dtype=dtype, endpoint=True),
                            np.array([max(lo, min(hi, v)) for v in (lo, hi, 0, 1, 2049, 2051, 65504, 65519, 65520,
                                                                    65536)], dtype)])
    else:
        # ties between float16 neighbours (2049 is halfway between 2048 and 2050), the overflow boundary
        # (65520 rounds to inf, just below it to 65504), the subnormal range, inf and nan
        special = np.array([2049.0, 2051.0, 65519.0, 65520.0, 65536.0, 1e6, 2.0 ** -25, 2.0 ** -25 * 1.5, 2.0 ** -26,
                            3 * 2.0 ** -26, 1e-30, -0.0, np.inf, -np.inf, np.nan, float(info.max)], dtype)
        spread = RNG.standard_normal(20000) * 2.0 ** RNG.integers(-30, 18, 20000)
        a = np.concatenate([special, -special, spread.astype(dtype)])
    same_bits(J(to_half)(a), numpy(to_half, a))


@pytest.mark.parametrize("dtype", CAST_DTYPES, ids=lambda d: np.dtype(d).name)
def test_casts_from_float16(dtype):
    every = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)  # every float16 value
    if np.dtype(dtype).kind == "f" or dtype is np.bool_:
        a = every
    else:  # in range and finite: NumPy's result of anything else depends on the CPU
        info = np.iinfo(dtype)
        wide = every.astype(np.float64)
        a = every[np.isfinite(wide) & (wide >= max(info.min, -65504)) & (wide <= min(info.max, 65504))]
    fn = lambda a: a.astype(dtype)  # noqa: E731
    same_bits(lk.jit(fn)(a), numpy(fn, a))


def test_every_float16_value_round_trips_through_float32_and_float64():
    every = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    same_bits(J(to_f32)(every), every.astype(np.float32))
    same_bits(J(to_f64)(every), every.astype(np.float64))
    same_bits(J(to_half)(every.astype(np.float32)), every)
    same_bits(J(to_half)(every.astype(np.float64)), every)


# ---------------------------------------------------------------- scalars

def scalar_ops(x, y):
    return x * y + x, x / y, x < y, np.sqrt(x)


def scalar_with_python_numbers(x):
    return x * 2.5 + 1, x - 3


def half_loop(a):
    """A Python loop over np.float16 scalars: CPython and NumPy round each += to float16."""
    s = np.float16(0.0)
    p = np.float16(1.0)
    for i in range(len(a)):
        s += a[i]
        p = p * a[i] if abs(p) < 1000 else p * np.float16(0.5)
    return s, p


def test_float16_scalars_in_and_out():
    for x, y in [(np.float16(1.5), np.float16(0.1)), (np.float16(65504), np.float16(2)), (np.float16(6e-8),
                 np.float16(-0.0)), (np.float16(np.inf), np.float16(3))]:
        got, want = J(scalar_ops)(x, y), numpy(scalar_ops, x, y)
        for g, w in zip(got, want):
            assert type(g) is type(w) or isinstance(g, bool)  # a bool comes back as Python's, for every dtype
            same_bits(g, w)
        for g, w in zip(J(scalar_with_python_numbers)(x), numpy(scalar_with_python_numbers, x)):
            assert type(g) is np.float16
            same_bits(g, w)


def test_a_zero_d_float16_array_is_a_float16_scalar():
    got = J(scalar_ops)(np.array(np.float16(2.5)), np.float16(3))
    for g, w in zip(got, numpy(scalar_ops, np.float16(2.5), np.float16(3))):
        same_bits(g, w)


def test_a_loop_over_float16_scalars_is_cpythons():
    a = halves(3000, 0, 2)
    for g, w in zip(J(half_loop)(a), half_loop(a)):
        same_bits(g, w)


# ---------------------------------------------------------------- indexing, stores, constructors

def stores(a, b):
    out = np.zeros(len(a), dtype=np.float16)
    out[0] = 0.1               # a Python float, rounded to float16
    out[1] = a[2] * b[3]
    out[2:6] = a[2:6] + b[:4]
    out[6:] = 1 / 3
    out[b > 0.5] = np.float16(7.25)
    return out, a[::-2].copy(), a[3]


def constructors(n):
    return (np.zeros(n, dtype=np.float16), np.ones(n, np.float16), np.full(n, 0.1, dtype=np.float16),
            np.empty(n, dtype=np.float16).dtype, np.arange(n).astype(np.float16), np.float16(1 / 3))


def test_indexing_and_stores():
    a, b = halves(40), halves(40, 0, 1)
    for g, w in zip(J(stores)(a, b), stores(a.copy(), b.copy())):
        same_bits(g, w)


def test_constructors_with_dtype_float16():
    got, want = J(constructors)(7), constructors(7)
    for g, w in zip(got, want):
        if isinstance(w, np.dtype):
            assert g == w
        else:
            same_bits(g, w)


def test_float16_results_are_float16_arrays_numpy_can_use():
    r = J(fused)(halves(5), halves(5), halves(5))
    assert isinstance(r, np.ndarray) and r.dtype == np.float16 and r.flags.c_contiguous and r.flags.writeable


def test_big_endian_float16_is_refused():
    with pytest.raises(TypeError, match="dtype"):
        J(neg)(np.ones(3, dtype=">f2"))


# ---------------------------------------------------------------- promotion (NEP 50) against np.result_type

ALL_DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64, np.float16,
              np.float32, np.float64]


def mixed(a, b):
    return a + b, a / b, np.maximum(a, b), np.arctan2(a, b)


@pytest.mark.parametrize("other", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
def test_float16_with_every_dtype_promotes_as_numpy(other):
    h, o = np.array([1.5, 2.0, 3.0], np.float16), np.array([1, 2, 3]).astype(other)
    for x, y in [(h, o), (o[0], h), (h[0], o[0])]:
        got, want = J(mixed)(x, y), numpy(mixed, x, y)
        for g, w in zip(got, want):
            assert np.asarray(g).dtype == np.asarray(w).dtype == np.result_type(np.asarray(g).dtype, w), (x, y)
            np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64), rtol=1e-3)


def with_python_numbers(a):
    return a + 1, a * 2.5, a - True, 1.5 / a, a ** 2, a > 0.1


def test_python_numbers_are_weak_against_float16():
    a = halves(9, 0.5, 4)
    for g, w in zip(J(with_python_numbers)(a), numpy(with_python_numbers, a)):
        same_bits(g, w)


def math_of(a):
    return np.sqrt(a), np.exp(a), np.sin(a), np.log1p(a), a / a


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
def test_math_functions_give_numpys_float_type(dtype):
    """np.sqrt of int8, uint8 and bool is float16, of int16 float32, of wider integers float64."""
    a = np.array([1, 2, 3]).astype(dtype)
    for g, w in zip(J(math_of)(a), numpy(math_of, a)):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=1e-3)


# ---------------------------------------------------------------- reductions
# NumPy's float16 sum and prod accumulate in float32 (its HALF_add reduce loop, pairwise) and round once; mean sums
# in float32 and divides in float64 (the count is an intp); var and std follow its formula (float16 sums of that
# kind, float16 deviations and squares). lorikeet does the same with its own summation order, so results agree
# within 1 ulp of float16 (in practice equal: a float32 sum rounded to float16 rarely differs).

def reduce_all(a):
    return np.sum(a), np.prod(a[:40]), np.mean(a), np.var(a), np.std(a), np.nansum(a), a.sum(), a.mean()


def extremes(a):
    return np.min(a), np.max(a), np.argmin(a), np.argmax(a), np.nanmin(a), np.nanmax(a)


def along(a):
    return (a.sum(axis=1), a.mean(axis=1), a.prod(axis=1), np.var(a, axis=1), a.max(axis=1), a.argmin(axis=1),
            np.nanmax(a, axis=1), a.mean(axis=0), a.min(axis=0), a.argmax(axis=0), a.sum(axis=0, keepdims=True))


def test_whole_array_reductions_within_one_ulp_of_numpy():
    for a in (halves(100_001, 0, 1), halves(777, -4, 4), halves(5, 0, 3)):
        got, want = J(reduce_all)(a), numpy(reduce_all, a)
        for g, w in zip(got, want):
            assert type(g) is type(w) is np.float16
            assert ulp_distance(g, w) <= 1, (g, w)


def test_extremes_are_exact_with_nan_and_signed_zeros():
    a = halves(1001)
    with_nan = a.copy()
    with_nan[[17, 500]] = np.nan
    zeros = np.array([0.0, -0.0, 0.0, -0.0], np.float16)
    for x in (a, with_nan, zeros, zeros[::-1].copy(), np.full(3, np.nan, np.float16)):
        for g, w in zip(J(extremes)(x), numpy(extremes, x)):
            same_bits(g, w)


def test_reductions_along_an_axis():
    a = halves(300 * 70, 0, 1).reshape(300, 70)
    got, want = J(along)(a), numpy(along, a)
    names = ["sum1", "mean1", "prod1", "var1", "max1", "argmin1", "nanmax1", "mean0", "min0", "argmax0", "sum0"]
    for name, g, w in zip(names, got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, name
        if name == "sum0":
            # along axis 0 NumPy's float16 loop rounds to float16 at every row (it accumulates in float32 only along
            # the last axis); lorikeet accumulates in float32 along every axis: one rounding
            exact = a.astype(np.float32).sum(axis=0, keepdims=True).astype(np.float16)
            assert ulp_distance(g, exact) <= 1
            bound = a.shape[0] * 2.0 ** -11 * np.abs(a.astype(np.float64)).sum(axis=0, keepdims=True)
            assert (np.abs(w.astype(np.float64) - g.astype(np.float64)) <= bound).all()
        else:
            assert ulp_distance(g, w) <= (0 if g.dtype.kind == "i" or name[:3] in ("max", "min", "nan") else 1), name


def sum_and_mean(a):
    return np.sum(a), np.mean(a)


def test_float32_accumulation_as_numpy():
    """The sum overflows float16 where NumPy's does, the mean does not (its sum is float32), and a count beyond
    65504 (the largest float16) divides exactly."""
    for a in (np.full(10, 60000, np.float16), np.ones(100_000, np.float16), np.full(70_000, 0.001, np.float16)):
        for g, w in zip(J(sum_and_mean)(a), numpy(sum_and_mean, a)):
            assert ulp_distance(g, w) <= 1, (g, w)


def scans(a):
    return np.cumsum(a), np.cumprod(a[:30] * np.float16(1.5))


def test_scans_round_each_step_as_numpy():
    a = halves(5001, 0, 1)
    got, want = J(scans)(a), numpy(scans, a)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype == np.float16
        if ON_TEAM:
            # chunks of the team add their carry to partial sums: rounded elsewhere; within the error bound that
            # NumPy's own per-step rounding has (k steps of half an ulp of the running sum)
            exact = np.cumsum(a.astype(np.float64)) if g.size == a.size else w.astype(np.float64)
            k = np.arange(1, g.size + 1)
            bound = k * 2.0 ** -11 * np.abs(exact)
            assert (np.abs(w - exact) <= bound).all() and (np.abs(g - exact) <= bound).all()
        else:
            same_bits(g, w)


def dots(a, b, m, n):
    return np.dot(a, b), m @ n, np.dot(m, a[:m.shape[1]])


def test_dot_and_matmul_multiply_and_sum_in_float32():
    a, b = halves(300, -2, 2), halves(300, -2, 2)
    m, n = halves(40 * 60, -2, 2).reshape(40, 60), halves(60 * 30, -2, 2).reshape(60, 30)
    for g, w in zip(J(dots)(a, b, m, n), numpy(dots, a, b, m, n)):
        assert np.asarray(g).dtype == np.asarray(w).dtype == np.float16
        assert ulp_distance(g, w) <= 1


def products(m, n, i8):
    return (m @ n, m.T @ m, np.dot(m[::2], n[:, ::3]), np.matmul(n.T, m.T), m[::-1] @ i8, m[:, :0] @ n[:0],
            m[:1] @ n, m @ n[:, :1])


def test_matrix_products_of_views_and_mixed_operands_are_numpys_float16_matmul():
    m, n = halves(40 * 60, -2, 2).reshape(40, 60), halves(60 * 30, -2, 2).reshape(60, 30)
    i8 = RNG.integers(-5, 6, size=(60, 30), dtype=np.int8)
    exact = products(*(x.astype(np.float64) for x in (m, n, i8)))
    bound = products(*(np.abs(x.astype(np.float64)) for x in (m, n, i8)))
    for g, w, e, b in zip(J(products)(m, n, i8), numpy(products, m, n, i8), exact, bound):
        assert np.asarray(g).dtype == np.asarray(w).dtype == np.float16 and np.shape(g) == np.shape(w)
        if os.environ.get("LORIKEET_BACKEND") == "gpu":
            # cuBLAS sums the float32 products in its own order: within float32 rounding of the exact sum (n of
            # 2**-24 the sum of magnitudes), then rounded once to float16 (half its ulp)
            ulp = np.spacing(np.abs(np.asarray(w, np.float16))).astype(np.float64)
            slack = 60 * 2.0 ** -24 * np.asarray(b) + ulp / 2
            assert np.all(np.abs(np.asarray(g, np.float64) - e) <= slack + 1e-300)
        else:
            assert ulp_distance(g, w) <= 1


def mm(a, b):
    return a @ b


def test_a_float16_matrix_product_is_one_float16_matmul():
    """The matmul intrinsic takes the halves as they are (no float32 copies of the operands, no rounding map of the
    result): a backend reads half the bytes and may use float16 hardware (cuBLAS's GemmEx on gpu)."""
    m = halves(6).reshape(2, 3)
    text = lk.jit(mm).inspect_types(m, m.T)
    assert "matmul(" in text and "float32" not in text, text


def prange_reductions(a):
    s = np.float16(0.0)
    m = np.float16(-100.0)
    for i in lk.prange(len(a)):
        s += a[i]
        m = max(m, a[i])
    return s, m


def test_prange_reductions_of_float16():
    """Each += rounds to float16 (the body's operations are float16's); on the team each chunk runs from the
    identity and the chunks' results combine in order, rounded alike: within the bound of per-step rounding."""
    a = halves(20_001, 0, 1)
    got, want = J(prange_reductions)(a), prange_reductions(a)
    for g, w in zip(got, want):
        assert type(g) is np.float16
    same_bits(got[1], want[1])
    if ON_TEAM:
        exact = a.astype(np.float64).sum()
        assert abs(float(got[0]) - exact) <= a.size * 2.0 ** -11 * exact
    else:
        same_bits(got[0], want[0])


# ---------------------------------------------------------------- the other nodes

def step(x, y):
    """Too long to inline: float16 parameters and result pass between compiled functions."""
    a = x * y
    b = a + x
    c = b - y
    d = c * c
    e = d / (x + np.float16(9))
    f = e + a
    g = f * np.float16(0.5)
    if g > 1:
        g = g - 1
    return g + b


def calls(a, b):
    out = np.empty(len(a), np.float16)
    for i in range(len(a)):
        out[i] = step(a[i], b[i])
    return out


def test_a_call_with_float16_arguments_and_result():
    a, b = halves(300, -4, 4), halves(300, -4, 4)
    assert "step" in J(calls).inspect_types(a, b)  # called, not inlined
    same_bits(J(calls)(a, b), calls(a, b))


def views_and_selections(a, b, m):
    return (np.cumsum(m, axis=0), np.cumsum(m, axis=1), np.where(a > 0, a, b), np.clip(a, -1, 1),
            np.concatenate((a, b)), a[a > 0], m.T.copy(), m.reshape(-1), m[::2, 1:] * b[:8], np.outer(a[:3], b[:3]),
            np.arange(5, dtype=np.float16), a.dtype == np.float16)


def test_views_selections_scans_along_axes():
    a, b, m = halves(50, -4, 4), halves(50, -4, 4), halves(63, -4, 4).reshape(7, 9)
    for g, w in zip(J(views_and_selections)(a, b, m), numpy(views_and_selections, a, b, m)):
        same_bits(g, w)


def with_operators(a, b):
    return lk.map(lambda x, y: x * y + np.float16(1), a, b), lk.reduce(lambda acc, x: acc + x, a)


def test_lk_map_and_reduce_round_each_operation():
    a, b = halves(1000, -2, 2), halves(1000, -2, 2)
    acc = a[0]
    for x in a[1:]:
        acc = acc + x
    got = J(with_operators)(a, b)
    same_bits(got[0], numpy(lambda x, y: x * y + np.float16(1), a, b))
    if ON_TEAM:  # a user's combine is taken as associative: chunks combine in order
        exact = float(np.sum(a.astype(np.float64)))
        assert abs(float(got[1]) - exact) <= a.size * 2.0 ** -11 * float(np.sum(np.abs(a.astype(np.float64))))
    else:
        same_bits(got[1], acc)
