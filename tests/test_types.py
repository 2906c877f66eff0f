"""Type promotion against NumPy 2 (NEP 50): the same function run by CPython+NumPy and by lorikeet must give results
of the same dtype (and value). Python scalars are weak: int8 array + 1 is int8, float32 array * 2.0 is float32."""
import itertools

import numpy as np
import pytest

from test_language import check, jitted

DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.int64, np.uint32, np.uint64, np.float16,
          np.float32, np.float64]


def arr(dtype, n=5, start=1):
    """Small values that fit every dtype (and are non-zero, so they can be divisors)."""
    if dtype is np.bool_:
        return np.array([True, False, True, True, False][:n])
    return (np.arange(n) % 4 + start).astype(dtype)


def nonzero(dtype, n=5):
    return np.ones(n, dtype) if dtype is np.bool_ else arr(dtype, n)


def add(a, b):
    return a + b


def sub(a, b):
    return a - b


def mul(a, b):
    return a * b


def truediv(a, b):
    return a / b


def floordiv(a, b):
    return a // b


def mod(a, b):
    return a % b


def lt(a, b):
    return a < b


PAIRS = list(itertools.combinations_with_replacement(DTYPES, 2))


def dname(d):
    return np.dtype(d).name


@pytest.mark.parametrize("d1,d2", PAIRS, ids=[f"{dname(a)}-{dname(b)}" for a, b in PAIRS])
def test_array_array_add_promotion(d1, d2):
    check(add, arr(d1), arr(d2, start=2))


SOME_PAIRS = [(np.int32, np.float32), (np.int8, np.uint8), (np.uint8, np.int8), (np.int16, np.float32),
              (np.int64, np.float32), (np.uint64, np.int64), (np.uint32, np.int32), (np.bool_, np.int8),
              (np.bool_, np.bool_), (np.float32, np.float32), (np.int32, np.int32), (np.int8, np.int8),
              (np.bool_, np.float32), (np.uint8, np.uint8)]


@pytest.mark.parametrize("op", [sub, mul, truediv, floordiv, mod, lt], ids=lambda f: f.__name__)
@pytest.mark.parametrize("d1,d2", SOME_PAIRS[::2], ids=[f"{dname(a)}-{dname(b)}" for a, b in SOME_PAIRS[::2]])
def test_array_array_promotion_other_ops(op, d1, d2):
    # bool - bool is a TypeError in NumPy: lorikeet must raise TypeError too (CompileError is one)
    check(op, arr(d1), nonzero(d2))


# ---- Python literals in the source are weak


def plus_one(a):
    return a + 1


def one_minus(a):
    return 1 - a


def times_two_float(a):
    return a * 2.0


def plus_true(a):
    return a + True


def div_two(a):
    return a / 2


def floordiv_two(a):
    return a // 2


def mod_three(a):
    return a % 3


def pow_two(a):
    return a ** 2


def times_half(a):
    return 0.5 * a


def lt_one_half(a):
    return a < 1.5


WEAK_OPS = [plus_one, one_minus, times_two_float, plus_true, div_two, floordiv_two, mod_three, pow_two, times_half,
            lt_one_half]


@pytest.mark.parametrize("f", WEAK_OPS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_python_literals_are_weak_with_arrays(f, dtype):
    check(f, arr(dtype))


@pytest.mark.parametrize("f", WEAK_OPS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.float32, np.float64], ids=dname)
def test_python_literals_are_weak_with_array_elements(f, dtype):
    # a[0] is a NumPy scalar of the array's dtype: a[0] + 1 is still that dtype
    def elem(a):
        return f(a[0])

    check(elem, arr(dtype))


def int8_wraps(a):
    return a + 1, a - 1, a * 2


@pytest.mark.parametrize("dtype,values", [(np.int8, [127, -128, 0, 100]), (np.uint8, [255, 0, 1, 200]),
                                          (np.int16, [32767, -32768, 5, 0]),
                                          (np.int32, [2 ** 31 - 1, -(2 ** 31), 0, 7])],
                         ids=["int8", "uint8", "int16", "int32"])
def test_small_int_arrays_wrap_like_numpy(dtype, values):
    check(int8_wraps, np.array(values, dtype))


def uint8_times_minus_one(a):
    return a * -1


def test_weak_int_literal_out_of_range_for_uint8_raises():
    # NumPy 2: a Python int that does not fit the array's dtype is an OverflowError, not a silent wrap
    with pytest.raises((OverflowError, TypeError)):
        jitted(uint8_times_minus_one)(np.array([1, 2], np.uint8))


# ---- Python scalar operations (CPython semantics: int // int -> int, int / int -> float, bool arithmetic -> int)


@pytest.mark.parametrize("op", [add, sub, mul, truediv, floordiv, mod, lt], ids=lambda f: f.__name__)
@pytest.mark.parametrize("x,y", [(7, 2), (-7, 2), (True, True), (True, 3), (2.5, True), (3, 1.5), (False, True)])
def test_python_scalar_promotion(op, x, y):
    check(op, x, y)


# ---- NumPy scalars are strong (arguments and array elements)

SCALAR_CASES = [(np.int32(3), np.float32(2)), (np.int8(3), np.int8(2)), (np.uint8(200), np.int8(1)),
                (np.float32(1.5), np.float32(2)), (np.float32(1.5), np.float64(2)), (np.int8(5), np.int16(2)),
                (np.uint64(5), np.int64(2)), (np.bool_(True), np.bool_(True)), (np.int32(7), np.int32(2)),
                (np.int64(7), np.float32(2)), (np.uint32(7), np.int32(-2))]


@pytest.mark.parametrize("op", [add, sub, mul, truediv, floordiv, mod], ids=lambda f: f.__name__)
@pytest.mark.parametrize("x,y", SCALAR_CASES, ids=[f"{type(a).__name__}-{type(b).__name__}" for a, b in SCALAR_CASES])
def test_numpy_scalar_arguments_promote_like_numpy(op, x, y):
    check(op, x, y)


@pytest.mark.parametrize("f", WEAK_OPS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("x", [np.int8(3), np.uint8(3), np.int32(3), np.float32(3.0)], ids=lambda x: type(x).__name__)
def test_numpy_scalar_argument_with_python_literal(f, x):
    check(f, x)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int32, np.float32], ids=dname)
@pytest.mark.parametrize("sdtype", [np.int16, np.int64, np.float64, np.float32], ids=dname)
def test_array_with_numpy_scalar_argument_is_strong(dtype, sdtype):
    check(add, arr(dtype), sdtype(2))
    check(mul, sdtype(2), arr(dtype))


def elem_mixed(a, b):
    return a[0] + b[0], a[1] * b[1], a[0] / b[0], a[0] // b[0]


# bool // bool is covered with arrays (elementwise floor division of bools is not defined on elements)
NUMBER_PAIRS = [(a, b) for a, b in SOME_PAIRS if np.bool_ not in (a, b)]


@pytest.mark.parametrize("d1,d2", NUMBER_PAIRS, ids=[f"{dname(a)}-{dname(b)}" for a, b in NUMBER_PAIRS])
def test_array_element_promotion(d1, d2):
    check(elem_mixed, arr(d1), nonzero(d2))


# ---- Python scalars passed as arguments or held in variables: weak in NumPy too


def scale_by_arg(a, s):
    return a * s


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.uint8, np.int32], ids=dname)
@pytest.mark.parametrize("s", [2, 2.5, True], ids=["int", "float", "bool"])
def test_python_scalar_arguments_are_weak_like_in_numpy(dtype, s):
    check(scale_by_arg, arr(dtype), s)


def accumulate_from_float_literal(a):
    s = 0.0
    for x in a:
        s += x
    return s


def literal_in_variable(a):
    k = 3
    return a * k


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.float64], ids=dname)
def test_python_scalars_in_variables_stay_weak(dtype):
    check(accumulate_from_float_literal, arr(dtype))
    check(literal_in_variable, arr(dtype))


# ---- result dtypes of math, reductions and constructors


def m_sqrt(a):
    return np.sqrt(a)


def m_abs(a):
    return np.abs(a)


def m_floor(a):
    return np.floor(a)


def m_exp(a):
    return np.exp(a)


def m_neg(a):
    return -a


@pytest.mark.parametrize("f", [m_sqrt, m_abs, m_floor, m_exp, m_neg], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32, np.float32, np.float64], ids=dname)
def test_ufunc_result_dtypes(f, dtype):
    check(f, arr(dtype))


@pytest.mark.parametrize("f", [m_sqrt, m_exp, m_abs, m_floor, m_neg], ids=lambda f: f.__name__)
def test_ufunc_result_dtypes_bool(f):
    # np.sqrt/np.exp of bool give float16; np.negative of bool is a TypeError
    check(f, arr(np.bool_))


def reductions(a):
    return a.sum(), a.prod(), a.min(), a.max(), a.mean(), a.all(), a.any(), a.sum(axis=0)


@pytest.mark.parametrize("dtype", DTYPES, ids=dname)
def test_reduction_result_dtypes(dtype):
    check(reductions, arr(dtype))


def constructors(n):
    return (np.zeros(n), np.ones(n), np.empty(n).dtype, np.arange(n), np.arange(0.0, n), np.arange(0, n, 0.5),
            np.full(n, 1), np.full(n, 1.0), np.full(n, True), np.zeros(n, np.int8), np.ones(n, dtype=np.uint16))


def test_constructor_dtypes():
    check(constructors, 3)


def comparisons_are_bool(a, b):
    return a < b, a == b, a >= 1, (a < b).sum()


@pytest.mark.parametrize("d1,d2", SOME_PAIRS[:8], ids=[f"{dname(a)}-{dname(b)}" for a, b in SOME_PAIRS[:8]])
def test_comparison_dtypes(d1, d2):
    check(comparisons_are_bool, arr(d1), arr(d2))


def int_floordiv_int(a, b):
    return a // b, a / b, a % b


@pytest.mark.parametrize("a,b", [(7, 2), (-7, 2), (7, -2), (0, 3)])
def test_int_floordiv_is_int64_and_truediv_is_float64(a, b):
    check(int_floordiv_int, a, b)
    check(int_floordiv_int, np.int64(a), np.int64(b))
