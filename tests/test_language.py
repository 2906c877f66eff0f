"""The scalar language of issue 2 against CPython: every compiled function is run by CPython too (same arguments)
and the results must agree in value and in kind (int stays int, float stays float, bool stays bool)."""
import math
import warnings

import numpy as np
import pytest

import lorikeet as lk
from helpers import J as jitted

# ---------------------------------------------------------------- helpers (kept local: only test_*.py files are ours)



def clone(a):
    """A copy of an argument with the same memory layout (a view stays a view over a fresh copy of its base)."""
    if not isinstance(a, np.ndarray):
        return a
    base = a
    while isinstance(base.base, np.ndarray):
        base = base.base
    if base is a:
        return a.copy(order="K")
    nb = base.copy(order="K")
    offset = a.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    return np.ndarray(a.shape, a.dtype, buffer=nb, offset=offset, strides=a.strides)


def same_float(got, exp, rel):
    if math.isnan(exp):
        assert math.isnan(got), f"expected nan, got {got!r}"
    elif math.isinf(exp) or exp == 0:
        assert got == exp, f"expected {exp!r}, got {got!r}"
    else:
        assert got == pytest.approx(exp, rel=rel, abs=0), f"expected {exp!r}, got {got!r}"


def same(got, exp, rel=1e-12):
    """got (lorikeet) equals exp (CPython/NumPy) in value, kind and, for NumPy values, dtype."""
    if isinstance(exp, np.ndarray):
        assert isinstance(got, np.ndarray), f"expected an ndarray, got {type(got).__name__} {got!r}"
        assert got.dtype == exp.dtype, f"dtype {got.dtype} != NumPy's {exp.dtype}"
        assert got.shape == exp.shape, f"shape {got.shape} != NumPy's {exp.shape}"
        if exp.dtype.kind == "f":
            r = max(rel, 1e-6) if exp.dtype.itemsize == 4 else rel
            np.testing.assert_allclose(got, exp, rtol=r, atol=0, equal_nan=True)
        else:
            np.testing.assert_array_equal(got, exp)
    elif isinstance(exp, tuple):
        assert isinstance(got, tuple), f"expected a tuple, got {type(got).__name__} {got!r}"
        assert len(got) == len(exp), f"expected {exp!r}, got {got!r}"
        for g, e in zip(got, exp):
            same(g, e, rel)
    elif exp is None:
        assert got is None, f"expected None, got {got!r}"
    elif isinstance(exp, (bool, np.bool_)):
        assert isinstance(got, (bool, np.bool_)), f"expected a bool {exp!r}, got {type(got).__name__} {got!r}"
        assert bool(got) == bool(exp)
    elif isinstance(exp, np.generic):
        assert np.asarray(got).dtype == exp.dtype, f"expected {exp.dtype} {exp!r}, got {type(got).__name__} {got!r}"
        if exp.dtype.kind == "f":
            same_float(float(got), float(exp), max(rel, 1e-6) if exp.dtype.itemsize == 4 else rel)
        else:
            assert got == exp, f"expected {exp!r}, got {got!r}"
    elif isinstance(exp, int):
        assert isinstance(got, (int, np.integer)) and not isinstance(got, (bool, np.bool_)), (
            f"expected an int {exp!r}, got {type(got).__name__} {got!r}")
        assert got == exp, f"expected {exp!r}, got {got!r}"
    elif isinstance(exp, float):
        assert isinstance(got, (float, np.floating)) and np.asarray(got).dtype == np.float64, (
            f"expected a float {exp!r}, got {type(got).__name__} {got!r}")
        same_float(float(got), exp, rel)
    else:
        assert got == exp


def check(f, *args, rel=1e-12):
    """Runs f under CPython and under lorikeet on equal copies of args; results and the arguments afterwards agree
    (where CPython raises, lorikeet must raise the same exception type)."""
    ref_args = [clone(a) for a in args]
    lk_args = [clone(a) for a in args]
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            exp = f(*ref_args)
    except Exception as e:  # lorikeet must raise what CPython/NumPy raise
        with pytest.raises(type(e)):
            jitted(f)(*lk_args)
        return None
    got = jitted(f)(*lk_args)
    same(got, exp, rel)
    for la, ra in zip(lk_args, ref_args):
        if isinstance(ra, np.ndarray):
            same(la, ra)  # not modified unless written, and written alike
    return got


# ---------------------------------------------------------------- arithmetic

def add(x, y):
    return x + y


def sub(x, y):
    return x - y


def mul(x, y):
    return x * y


def truediv(x, y):
    return x / y


def floordiv(x, y):
    return x // y


def mod(x, y):
    return x % y


def power(x, y):
    return x ** y


INT_PAIRS = [(7, 3), (-7, 3), (7, -3), (-7, -3), (0, 5), (6, 3), (-6, 3), (1, 1), (123456789, 1000), (-1, 7)]
FLOAT_PAIRS = [(7.5, 2.0), (-7.5, 2.0), (7.5, -2.0), (-7.5, -2.0), (0.0, 3.0), (-0.0, 3.0), (1e300, 1e-5),
               (0.1, 0.3), (5.0, 0.5), (-1.25, 0.75)]
MIXED_PAIRS = [(7, 2.5), (-7, 2.5), (7.5, 2), (-7.5, -2), (0, 0.5), (3, -1.5)]


@pytest.mark.parametrize("op", [add, sub, mul, truediv, floordiv, mod])
@pytest.mark.parametrize("x,y", INT_PAIRS)
def test_int_binary_ops(op, x, y):
    check(op, x, y)


@pytest.mark.parametrize("op", [add, sub, mul, truediv, floordiv, mod])
@pytest.mark.parametrize("x,y", FLOAT_PAIRS + MIXED_PAIRS)
def test_float_and_mixed_binary_ops(op, x, y):
    check(op, x, y)


@pytest.mark.parametrize("x,y", [(2, 10), (-3, 3), (0, 0), (7, 0), (-2, 7), (10, 15), (1, 62), (-1, 63)])
def test_int_power(x, y):
    check(power, x, y)


@pytest.mark.parametrize("x,y", [(2.0, 0.5), (2.5, 3), (-2.0, 3), (-2.0, 3.0), (9, 0.5), (2, -1.0), (0.0, 0.0),
                                 (1e-3, 2.5), (4.0, -0.5)])
def test_float_power(x, y):
    check(power, x, y)


def power_const(x):
    return x ** 2 + x ** 3 - x ** 0


@pytest.mark.parametrize("x", [0, 3, -4, 2.5, -1.5])
def test_power_by_constant(x):
    check(power_const, x)


def unary_minus(x):
    return -x


def unary_plus(x):
    return +x


def invert(x):
    return ~x


def logical_not(x):
    return not x


@pytest.mark.parametrize("x", [0, 5, -5, 2 ** 40, 0.0, -0.0, 2.5, -2.5, math.inf, True, False])
@pytest.mark.parametrize("op", [unary_minus, unary_plus, logical_not])
def test_unary_ops(op, x):
    check(op, x)


@pytest.mark.parametrize("x", [0, 5, -5, 2 ** 40, -1])
def test_invert_int(x):
    check(invert, x)


@pytest.mark.parametrize("op", [add, sub, mul, truediv, floordiv, mod])
@pytest.mark.parametrize("x,y", [(True, True), (True, 3), (False, 2.5), (7, True), (2.5, True)])
def test_bool_arithmetic(op, x, y):
    check(op, x, y)


def expression_mix(a, b, c):
    return (a * b - c) // 3 + a % 4 * (b + 1) - -c ** 2


@pytest.mark.parametrize("a,b,c", [(1, 2, 3), (-5, 7, 2), (10, -3, -4), (0, 0, 0)])
def test_precedence_of_mixed_expression(a, b, c):
    check(expression_mix, a, b, c)


def large_ints(x):
    return x * 1000003 + 2 ** 40 - x // 7


@pytest.mark.parametrize("x", [0, 1, -1, 123456789, -987654321, 2 ** 31, -(2 ** 31)])
def test_large_ints_within_int64(x):
    check(large_ints, x)


# ---------------------------------------------------------------- comparisons

def lt(x, y):
    return x < y


def le(x, y):
    return x <= y


def eq(x, y):
    return x == y


def ne(x, y):
    return x != y


def gt(x, y):
    return x > y


def ge(x, y):
    return x >= y


@pytest.mark.parametrize("op", [lt, le, eq, ne, gt, ge])
@pytest.mark.parametrize("x,y", [(1, 2), (2, 2), (3, 2), (-1, 1), (1.5, 1.5), (1.5, 2), (2, 1.5), (2, 2.0),
                                 (math.nan, 1.0), (math.nan, math.nan), (-math.inf, 0), (0.0, -0.0),
                                 (True, 1), (False, 0.5)])
def test_comparisons(op, x, y):
    check(op, x, y)


def chain_lt_le(x, y, z):
    return x < y <= z


def chain_mixed(x, y, z):
    return x < y > z


def chain_eq(x, y, z):
    return x == y == z


def chain_four(w, x, y, z):
    return w <= x < y != z


def in_range(x):
    return 0 <= x < 10


@pytest.mark.parametrize("x,y,z", [(1, 2, 3), (1, 2, 2), (3, 2, 1), (2, 2, 2), (1, 3, 2), (1.0, 2, 2.5),
                                   (math.nan, 1, 2), (0, -1, 5)])
@pytest.mark.parametrize("f", [chain_lt_le, chain_mixed, chain_eq])
def test_chained_comparisons(f, x, y, z):
    check(f, x, y, z)


@pytest.mark.parametrize("args", [(1, 2, 3, 4), (1, 2, 3, 3), (2, 1, 3, 4), (1, 1, 2, 5)])
def test_chained_comparison_of_four(args):
    check(chain_four, *args)


@pytest.mark.parametrize("x", [-1, 0, 5, 9, 10, 9.5, -0.5])
def test_chained_range_check(x):
    check(in_range, x)


def chain_short_circuit(a, i):
    # the second comparison must not be evaluated (it would index out of bounds) when the first is false
    return 0 <= i < len(a) and a[i] > 0


@pytest.mark.parametrize("i", [-3, 0, 2, 3, 100])
def test_chained_comparison_short_circuits(i):
    check(chain_short_circuit, np.array([1.0, -2.0, 3.0]), i)


# ---------------------------------------------------------------- and / or / not (Python value semantics)

def and_(x, y):
    return x and y


def or_(x, y):
    return x or y


def not_and_or(x, y, z):
    # `not x` is a bool and y an int: + 0 makes the result an int whichever operand Python returns
    return (not x or y and not z) + 0


@pytest.mark.parametrize("x,y", [(0, 5), (3, 5), (3, 0), (0, 0), (-2, 7)])
@pytest.mark.parametrize("f", [and_, or_])
def test_and_or_return_an_operand_ints(f, x, y):
    check(f, x, y)


@pytest.mark.parametrize("x,y", [(0.0, 2.5), (1.5, 2.5), (1.5, 0.0), (math.nan, 0.0), (-0.0, 3.0)])
@pytest.mark.parametrize("f", [and_, or_])
def test_and_or_return_an_operand_floats(f, x, y):
    check(f, x, y)


@pytest.mark.parametrize("x,y", [(True, False), (False, True), (True, True), (False, False)])
@pytest.mark.parametrize("f", [and_, or_])
def test_and_or_bools(f, x, y):
    check(f, x, y)


@pytest.mark.parametrize("x,y,z", [(a, b, c) for a in (0, 1) for b in (0, 2) for c in (0, 3)])
def test_not_and_or_precedence(x, y, z):
    check(not_and_or, x, y, z)


def and_short_circuit(n):
    return n != 0 and 100 // n > 3


def or_short_circuit(n):
    return n == 0 or 100 % n == 0


@pytest.mark.parametrize("n", [0, 5, 50, -7])
def test_and_or_short_circuit_avoids_division_by_zero(n):
    check(and_short_circuit, n)
    check(or_short_circuit, n)


def or_default(x, d):
    y = x or d
    return y * 2


@pytest.mark.parametrize("x,d", [(0, 7), (3, 7), (0.0, 1.5), (2.5, 1.5)])
def test_or_as_default_value(x, d):
    check(or_default, x, d)


# ---------------------------------------------------------------- conditional expressions, if/elif/else

def ternary(x):
    return x * 2 if x > 0 else -x


def nested_ternary(x):
    return -1 if x < 0 else (0 if x == 0 else 1)


def sign_ifs(x):
    if x > 0:
        return 1
    elif x < 0:
        return -1
    else:
        return 0


def classify(x):
    r = 0
    if x < -10:
        r = 1
    elif x < 0:
        r = 2
    elif x == 0:
        r = 3
    elif x < 10:
        r = 4
    else:
        r = 5
    return r


def if_without_else(x):
    y = x
    if x > 3:
        y = x * 10
    return y


def nested_if(a, b):
    if a > 0:
        if b > 0:
            r = 1.5
        else:
            r = 2.5
    else:
        if b > a:
            r = 3.5
        elif b == a:
            r = 4.5
        else:
            r = 5.5
    return r


@pytest.mark.parametrize("x", [-20, -5, 0, 5, 10, 42])
def test_if_elif_else(x):
    check(ternary, x)
    check(nested_ternary, x)
    check(sign_ifs, x)
    check(classify, x)
    check(if_without_else, x)


@pytest.mark.parametrize("x", [-20.5, -0.0, 0.5, math.nan, math.inf])
def test_if_elif_else_floats(x):
    check(ternary, x)
    check(sign_ifs, x)
    check(classify, x)


@pytest.mark.parametrize("a,b", [(1, 1), (1, -1), (-1, 0), (-1, -1), (-1, -2), (0, 0)])
def test_nested_if(a, b):
    check(nested_if, a, b)


def truthiness(x):
    if x:
        return 1
    return 2


@pytest.mark.parametrize("x", [0, 3, -1, 0.0, -0.0, 0.1, math.nan, True, False])
def test_truthiness_of_numbers(x):
    check(truthiness, x)


# ---------------------------------------------------------------- loops

def collatz_steps(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


def gcd(a, b):
    while b:
        a, b = b, a % b
    return a


def while_never_runs(n):
    s = 5
    while n < 0:
        s += 1
    return s


@pytest.mark.parametrize("n", [1, 2, 7, 27, 97])
def test_while_collatz(n):
    check(collatz_steps, n)


@pytest.mark.parametrize("a,b", [(12, 18), (17, 5), (0, 9), (9, 0), (-12, 18), (1071, 462)])
def test_while_gcd_with_tuple_swap(a, b):
    check(gcd, a, b)


def test_while_that_never_runs():
    check(while_never_runs, 3)


def range1(n):
    s = 0
    for i in range(n):
        s = s * 3 + i
    return s


def range2(a, b):
    s = 0
    for i in range(a, b):
        s = s * 3 + i
    return s


def range3(a, b, c):
    s = 0
    k = 0
    for i in range(a, b, c):
        s = s * 3 + i
        k += 1
    return s, k


def range_last_value(n):
    i = -1
    for i in range(2, n, 3):
        pass
    return i


def range_float_accumulate(n):
    s = 0.0
    for i in range(n):
        s += 1.0 / (i + 1)
    return s


@pytest.mark.parametrize("n", [0, 1, 5, -3, 20])
def test_for_range_one_arg(n):
    check(range1, n)
    check(range_float_accumulate, n)


@pytest.mark.parametrize("a,b", [(0, 5), (3, 8), (-4, 2), (5, 5), (8, 3), (-10, -7)])
def test_for_range_two_args(a, b):
    check(range2, a, b)


@pytest.mark.parametrize("a,b,c", [(0, 10, 3), (0, 10, 1), (1, 10, 10), (10, 0, -1), (10, 0, -3), (10, -10, -7),
                                   (0, 10, -1), (10, 0, 2), (-5, 5, 4), (5, 5, -1), (0, 1, 100), (3, -3, -100)])
def test_for_range_three_args_incl_negative_step(a, b, c):
    check(range3, a, b, c)


def count_range_guarded(a, b, c):
    n = 0
    for i in range(a, b, c):
        n += 1
        if n > 10:
            break
    return n


@pytest.mark.parametrize("a,b,c", [(2 ** 63 - 5, 2 ** 63 - 1, 3), (-(2 ** 63), 2 ** 63 - 1, 2 ** 62),
                                   (-(2 ** 63) + 4, -(2 ** 63), -3), (0, 2 ** 63 - 1, 2 ** 62)])
def test_range_near_the_int64_limits_counts_like_cpython(a, b, c):
    # all values are int64; stepping past the last one must not wrap around (guarded so a wrap cannot hang)
    check(count_range_guarded, a, b, c)


@pytest.mark.parametrize("n", [3, 5, 10, 11])
def test_loop_variable_keeps_last_value(n):
    check(range_last_value, n)


def range_bound_evaluated_once(n):
    s = 0
    for i in range(n):
        n = n - 1
        s += i
    return s, n


def assigning_loop_variable(n):
    s = 0
    for i in range(n):
        i += 10
        s += i
    return s


@pytest.mark.parametrize("n", [0, 1, 6])
def test_range_is_evaluated_once_and_loop_variable_rebinding_is_local(n):
    check(range_bound_evaluated_once, n)
    check(assigning_loop_variable, n)


def iterate_1d(a):
    s = 0.0
    k = 0
    for x in a:
        s = s * 0.5 + x
        k += 1
    return s, k


def iterate_rows(a):
    s = 0.0
    for row in a:
        s = s * 0.5 + row[0] - row[-1]
    return s


def iterate_rows_sum(a):
    total = 0.0
    for row in a:
        total = total * 0.5 + row.sum()
    return total


def write_through_rows(a):
    for row in a:
        row[0] = row[-1] * 2.0
    return a[0, 0]


M = np.arange(24.0).reshape(4, 6)
V = np.arange(10.0) - 3.5
ROW_ARGS = {"c": M, "T": M.T, "step": M[::2, ::-2], "rev": M[::-1], "one_row": M[:1], "one_col": M[:, :1]}
VEC_ARGS = {"c": V, "step2": V[::2], "rev": V[::-1], "empty": V[:0], "one": V[3:4],
            "int32": np.arange(7, dtype=np.int32)}


@pytest.mark.parametrize("name", list(VEC_ARGS))
def test_for_over_1d_array(name):
    check(iterate_1d, VEC_ARGS[name])


@pytest.mark.parametrize("name", list(ROW_ARGS))
def test_for_over_first_axis_of_2d(name):
    check(iterate_rows, ROW_ARGS[name])
    check(iterate_rows_sum, ROW_ARGS[name])


@pytest.mark.parametrize("name", list(ROW_ARGS))
def test_rows_of_for_loop_are_views(name):
    check(write_through_rows, ROW_ARGS[name])


def first_index_over(a, t):
    idx = -1
    for i in range(len(a)):
        if a[i] > t:
            idx = i
            break
    return idx


def sum_skipping(n):
    s = 0
    for i in range(n):
        if i % 3 == 0:
            continue
        if i > 50:
            break
        s += i
    return s


def nested_break(n):
    count = 0
    for i in range(n):
        for j in range(n):
            if j > i:
                break
            if (i + j) % 2:
                continue
            count += i * j
    return count


def while_break_continue(n):
    i = 0
    s = 0
    while True:
        i += 1
        if i > n:
            break
        if i % 2 == 0:
            continue
        s += i
    return s


def for_else_free_search(a, v):
    found = False
    for x in a:
        if x == v:
            found = True
            break
    return found


@pytest.mark.parametrize("t", [-10.0, 0.0, 2.0, 100.0])
def test_break(t):
    check(first_index_over, V, t)
    check(first_index_over, V[::-1], t)


@pytest.mark.parametrize("n", [0, 1, 10, 100])
def test_break_and_continue(n):
    check(sum_skipping, n)
    check(nested_break, n if n < 50 else 30)
    check(while_break_continue, n)


@pytest.mark.parametrize("v", [-3.5, 0.5, 99.0])
def test_break_out_of_array_iteration(v):
    check(for_else_free_search, V, v)


# ---------------------------------------------------------------- returns, tuples

def early_returns(x):
    if x < 0:
        return -1.0
    for i in range(10):
        if i * i > x:
            return i * 1.0
    return x / 2


def return_in_while(n):
    k = 0
    while k < 1000:
        if k * k >= n:
            return k
        k += 1
    return -1


@pytest.mark.parametrize("x", [-3.0, 0.0, 5.0, 80.0, 100.0])
def test_several_returns(x):
    check(early_returns, x)


@pytest.mark.parametrize("n", [0, 1, 17, 10 ** 6, 10 ** 7])
def test_return_inside_while(n):
    check(return_in_while, n)


def fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def pack_unpack(x, y):
    t = (x, y, x + y)
    a, b, c = t
    return c, b, a


def nested_tuples(x, y):
    t = ((x, y), (y * 2.0, (x - y, 7)))
    (p, q), (r, (s, u)) = t
    return p + q + r + s + u, t[1][1][0], t[-1][0], t[0]


def swap3(a, b, c):
    a, b, c = c, a, b
    return a, b, c


def heterogeneous_tuple(x):
    return x, x * 0.5, x > 0, (x, -x), None


@pytest.mark.parametrize("n", [0, 1, 2, 10, 50, 90])
def test_tuple_packing_unpacking_fib(n):
    check(fib, n)


@pytest.mark.parametrize("x,y", [(1, 2), (-3, 4), (2.5, -1.0)])
def test_tuples(x, y):
    check(pack_unpack, x, y)
    check(nested_tuples, x, y)
    check(swap3, x, y, x - y)


@pytest.mark.parametrize("x", [3, -2, 0])
def test_heterogeneous_tuple_return(x):
    check(heterogeneous_tuple, x)


def unpack_shape(a):
    n, m = a.shape
    return n * 100 + m


def shape_tuple(a):
    return a.shape


@pytest.mark.parametrize("name", list(ROW_ARGS))
def test_unpack_array_shape(name):
    check(unpack_shape, ROW_ARGS[name])
    check(shape_tuple, ROW_ARGS[name])


# ---------------------------------------------------------------- augmented assignment

def augmented_int(x, y):
    r = x
    r += y
    r *= 3
    r -= y
    r //= 2
    r %= 1000
    r **= 2
    return r


def augmented_float(x, y):
    r = x
    r += y
    r *= 1.5
    r -= y
    r /= 4
    r //= 0.5
    r %= 3.0
    r **= 2
    return r


def augmented_int_to_float(x):
    r = x
    r /= 2
    return r


@pytest.mark.parametrize("x,y", [(7, 3), (-7, 3), (100, -9), (0, 0)])
def test_augmented_assignment_int(x, y):
    check(augmented_int, x, y)


@pytest.mark.parametrize("x,y", [(7.5, 3.0), (-7.5, 3.0), (1.0, -9.0), (4, 2)])
def test_augmented_assignment_float(x, y):
    check(augmented_float, x, y)


@pytest.mark.parametrize("x", [7, -8, 0])
def test_augmented_true_division_turns_int_into_float(x):
    check(augmented_int_to_float, x)


# ---------------------------------------------------------------- builtins len/min/max/abs

def builtin_len(a):
    return len(a)


def builtin_len_tuple(x):
    t = (x, x, (x, x))
    return len(t)


@pytest.mark.parametrize("a", [V, V[::2], V[:0], M, M.T, np.zeros((0, 3)), np.zeros((1, 2, 3), np.int32)],
                         ids=["1d", "step", "empty", "2d", "T", "0x3", "3d"])
def test_len(a):
    check(builtin_len, a)


def test_len_of_tuple():
    check(builtin_len_tuple, 3)


def min2(x, y):
    return min(x, y)


def max2(x, y):
    return max(x, y)


def min3(x, y, z):
    return min(x, y, z)


def max3(x, y, z):
    return max(x, y, z)


@pytest.mark.parametrize("x,y", [(1, 2), (2, 1), (-5, -5), (1.5, 2.5), (2.5, -1.5), (-0.0, 0.0), (0.0, -0.0),
                                 (True, False)])
def test_min_max_two(x, y):
    check(min2, x, y)
    check(max2, x, y)


@pytest.mark.parametrize("x,y", [(math.nan, 1.0), (1.0, math.nan)])
def test_min_max_nan_follow_cpython(x, y):
    # CPython keeps the first argument unless a later one compares smaller/greater: min(nan, 1) is nan,
    # min(1, nan) is 1
    check(min2, x, y)
    check(max2, x, y)


@pytest.mark.parametrize("x,y,z", [(1, 2, 3), (3, 1, 2), (2, 3, 1), (-1, -1, 0), (0.5, -2.5, 1.0)])
def test_min_max_three(x, y, z):
    check(min3, x, y, z)
    check(max3, x, y, z)


def builtin_abs(x):
    return abs(x)


@pytest.mark.parametrize("x", [0, 5, -5, -(2 ** 40), 0.0, -0.0, 2.5, -2.5, -math.inf, math.nan, True])
def test_abs(x):
    got = check(builtin_abs, x)
    if isinstance(x, float) and x == 0:
        assert math.copysign(1.0, got) == 1.0  # abs(-0.0) is +0.0


# ---------------------------------------------------------------- math.*

def math_unary(name):
    fn = getattr(math, name)

    # closures over a module function: lorikeet resolves the free name `fn` at compile time
    def call(x):
        return fn(x)

    call.__name__ = f"math_{name}"
    return call


MATH_UNARY = {
    "sqrt": [0.0, 2.0, 1e10, 0.25], "exp": [0.0, 1.0, -3.5, 700.0], "log": [1.0, 2.718281828, 1e-300, 10.0],
    "log10": [1.0, 1000.0, 0.5], "log2": [1.0, 8.0, 0.3], "log1p": [0.0, 1e-10, 3.0], "expm1": [0.0, 1e-10, 2.0],
    "sin": [0.0, 1.0, -3.0, 100.0], "cos": [0.0, 1.0, -3.0, 100.0], "tan": [0.0, 1.0, -1.2],
    "asin": [0.0, 0.5, -1.0], "acos": [0.0, 0.5, 1.0], "atan": [0.0, 1.0, -50.0], "sinh": [0.0, 1.0, -2.0],
    "cosh": [0.0, 1.0, -2.0], "tanh": [0.0, 0.5, -20.0], "fabs": [-2.5, 0.0, 3.0],
    "floor": [2.5, -2.5, 3.0, -0.5], "ceil": [2.5, -2.5, 3.0, -0.5], "trunc": [2.5, -2.5, 3.0, -0.5],
    "isnan": [1.0, math.nan, math.inf], "isinf": [1.0, math.nan, -math.inf], "isfinite": [1.0, math.nan, math.inf],
    "degrees": [1.0, -3.0], "radians": [90.0, -45.0], "erf": [0.0, 0.5, -2.0], "gamma": [0.5, 5.0, 3.3],
}
MATH_UNARY_FUNCS = {name: math_unary(name) for name in MATH_UNARY}


@pytest.mark.parametrize("name,x", [(n, x) for n, xs in MATH_UNARY.items() for x in xs])
def test_math_unary_functions(name, x):
    # floor/ceil/trunc return ints in CPython; isnan & co return bools
    check(MATH_UNARY_FUNCS[name], x, rel=1e-13)


@pytest.mark.parametrize("name", ["sqrt", "exp", "sin", "floor", "fabs"])
@pytest.mark.parametrize("x", [3, -2, 0])
def test_math_functions_on_ints(name, x):
    if name == "sqrt" and x < 0:
        x = -x
    check(MATH_UNARY_FUNCS[name], x, rel=1e-13)


def math_binary(x, y):
    return (math.atan2(x, y), math.hypot(x, y), math.pow(x, 2.0), math.copysign(x, y), math.fmod(x, y),
            math.atan2(y, x))


def math_consts():
    return math.pi, math.e, math.tau, math.inf, -math.inf


def math_nan_const():
    return math.nan


def math_in_expression(a, b):
    return math.sqrt(a * a + b * b) * math.exp(-a) + math.log(1 + abs(b)) - math.sin(a) * math.cos(b)


@pytest.mark.parametrize("x,y", [(1.0, 2.0), (-3.0, 4.0), (0.5, -0.25), (-1.0, -1.0), (7, 3)])
def test_math_binary_functions(x, y):
    check(math_binary, x, y, rel=1e-13)


def test_math_constants():
    check(math_consts)
    check(math_nan_const)


@pytest.mark.parametrize("a,b", [(0.0, 0.0), (1.0, 2.0), (-2.5, 3.5), (3, 4)])
def test_math_in_expression(a, b):
    check(math_in_expression, a, b, rel=1e-13)


# ---------------------------------------------------------------- calls to other module-level functions

def helper_scale(x, scale=2.0, offset=0):
    return x * scale + offset


def helper_pair(x, y):
    return x + y, x - y


def helper_sumsq(a):
    s = 0.0
    for i in range(len(a)):
        s += a[i] * a[i]
    return s


def helper_lin(x, scale, offset):
    return x * scale + offset


def helper_chain(x):
    return helper_lin(helper_lin(x, 2.0, 0), 0.5, 1)


def call_positional(x):
    return helper_lin(x, 3.0, 1)


def call_keywords(x):
    return helper_lin(x, 2.0, offset=5) + helper_lin(x, offset=0, scale=-1.0) + helper_lin(offset=1, x=x, scale=0.25)


def call_defaults(x):
    return helper_scale(x) + helper_scale(x, 3.0) + helper_scale(x, offset=5) + helper_scale(x, scale=-1.0)


def call_specialised_per_site(n, x):
    # the same helper called with an int and with a float: two specialisations
    return helper_pair(n, n + 1), helper_pair(x, 0.5)


def call_returning_tuple(x, y):
    s, d = helper_pair(x, y)
    return s * d


def call_with_array(a):
    return helper_sumsq(a) + helper_sumsq(a[::2])


@lk.jit
def jitted_helper(x, k):
    return x * k - 1


def call_jitted_helper(x):
    return jitted_helper(x, 3) + jitted_helper(x, k=2) + jitted_helper(k=10, x=x)


def call_helper_in_loop(n):
    s = 0.0
    for i in range(n):
        s += helper_lin(i, 0.5, 0)
    return s


@pytest.mark.parametrize("x", [0, 3, -2, 2.5])
def test_calls_to_module_level_functions_with_keyword_args(x):
    check(call_positional, x)
    check(call_keywords, x)
    check(helper_chain, x)
    check(call_jitted_helper, x)


@pytest.mark.parametrize("x", [0, 3, -2, 2.5])
def test_calls_to_helpers_with_default_args(x):
    check(call_defaults, x)


@pytest.mark.parametrize("n,x", [(3, 1.5), (-1, 0.0), (0, -2.5)])
def test_callee_specialised_per_call_site(n, x):
    check(call_specialised_per_site, n, x)
    check(call_returning_tuple, n, x)


@pytest.mark.parametrize("name", list(VEC_ARGS))
def test_helper_taking_array(name):
    check(call_with_array, VEC_ARGS[name])


@pytest.mark.parametrize("n", [0, 1, 100])
def test_helper_called_in_loop(n):
    check(call_helper_in_loop, n)


GLOBAL_INT = 7
GLOBAL_FLOAT = 0.25
GLOBAL_TUPLE = (1, 2.5, 3)


def uses_globals(x):
    return x * GLOBAL_INT + GLOBAL_FLOAT + GLOBAL_TUPLE[1]


def make_closure(k):
    def inner(x):
        return x * k + 1

    return inner


@pytest.mark.parametrize("x", [1, -2.5])
def test_globals_and_closure_constants(x):
    check(uses_globals, x)
    check(make_closure(3), x)
    check(make_closure(0.5), x)


def test_dispatcher_calls_like_the_python_function():
    f = lk.jit(helper_lin)
    assert f(2, 3.0, 1) == helper_lin(2, 3.0, 1)
    assert f(2, 3.0, offset=4) == helper_lin(2, 3.0, offset=4)
    assert f(x=1.5, scale=2.0, offset=1) == helper_lin(x=1.5, scale=2.0, offset=1)
    assert f.py_func is helper_lin
    assert f.__name__ == "helper_lin"


def test_dispatcher_applies_default_args():
    f = lk.jit(helper_scale)
    assert f(2) == helper_scale(2)
    assert f(2, 3.0) == helper_scale(2, 3.0)
    assert f(2, offset=4) == helper_scale(2, offset=4)


def test_same_signature_reuses_code_and_new_signature_recompiles():
    f = lk.jit(range1)
    for n in range(20):
        assert f(n) == range1(n)
    assert f(True) == range1(True)
    f2 = lk.jit(add)
    assert f2(1, 2) == 3 and f2(1.5, 2) == 3.5 and f2(1, 2) == 3
    same(f2(np.int32(2), np.int32(3)), np.int32(2) + np.int32(3))


# lambdas: the brief of issue 2 listed them as unsupported, but commit b373bef made them part of the language;
# where they compile they must behave as in CPython


def uses_lambda(x):
    g = lambda v: v * 2 + 1  # noqa: E731
    return g(x) + g(1)


@pytest.mark.parametrize("x", [3, -2.5])
def test_lambda_in_body_matches_cpython(x):
    check(uses_lambda, x)


# ---------------------------------------------------------------- inlined calls, shared reductions (ir/inline_calls.c, ir/cse.c)
# Small helpers are inlined into their callers and repeated reductions computed once: the results, the order in
# which arguments with effects are evaluated, and the arrays written must stay CPython's.


def bump(a):
    # writes its argument: a store, so never inlined, and it stays a call that writes memory
    a[0] = a[0] + 1.0
    return a[0]


def plus_ten_times(u, v):
    return u + v * 10.0


def two_step_sum(u, v):
    t = u * 2.0
    return t + v


def arg_written_by_first_arg(a):
    return plus_ten_times(bump(a), a[0])  # bump writes a[0] before a[0] is read


def arg_read_before_second_arg_writes(a):
    return plus_ten_times(a[0], bump(a))  # a[0] is read before bump writes it


def read_before_inlined_call(a):
    return a[0] + two_step_sum(bump(a), a[0])


def sum_before_inlined_call(a):
    return a.sum() + two_step_sum(bump(a), a.sum())


def inlined_call_then_read(a):
    return two_step_sum(bump(a), a[0]) + a[0]


@pytest.mark.parametrize("f", [arg_written_by_first_arg, arg_read_before_second_arg_writes, read_before_inlined_call,
                               sum_before_inlined_call, inlined_call_then_read])
@pytest.mark.parametrize("name", ["c", "step2", "rev", "empty", "one"])
def test_inlined_call_keeps_argument_order_and_writes(f, name):
    check(f, VEC_ARGS[name])


def centered(a, offset=0.0, scale=1.0):
    return (a - a.mean()) * scale + offset


def calls_centered_with_keywords(a):
    return (centered(a) + centered(a, 1.0) + centered(a, scale=2.0) + centered(scale=0.5, a=a, offset=-1.0)).sum()


@pytest.mark.parametrize("name", ["c", "step2", "rev", "one", "int32"])
def test_inlined_callee_with_default_and_keyword_args(name):
    check(calls_centered_with_keywords, VEC_ARGS[name])


def sq_of(v):
    return v * v


def sum_sq(a):
    return sq_of(a).sum()


def sum_sq_loop(a):
    s = 0.0
    for i in range(len(a)):
        s += sq_of(a[i])
    return s


def sq_from_many_places(a, x):
    # sq_of on an array, on a scalar, inside sum_sq (inlined) and inside sum_sq_loop (a call, a loop)
    return sum_sq(a) + sq_of(x) + sq_of(len(a)) + sum_sq_loop(a) + sum_sq(a[::-1])


@pytest.mark.parametrize("name", ["c", "step2", "empty", "one", "int32"])
@pytest.mark.parametrize("x", [3, -1.5])
def test_callee_called_from_several_places(name, x):
    check(sq_from_many_places, VEC_ARGS[name], x)


def halve(n):
    return n // 2


def fact_via_helper(n):
    return 1 if n <= 1 else n * fact_via_helper(halve(n) * 2 - n + n - 1)


def test_recursion_is_still_refused_with_inlinable_helpers():
    with pytest.raises(lk.CompileError, match="recursion"):
        jitted(fact_via_helper)(5)


def mean_of(x):
    return x.mean()


def covariance_of(x, y):
    return ((x - mean_of(x)) * (y - mean_of(y))).mean()


def regression_fit(x, y):
    slope = covariance_of(x, y) / covariance_of(x, x)
    offset = y.mean() - slope * x.mean()
    return slope, offset


@pytest.mark.parametrize("name", ["c", "step2", "rev", "one", "int32"])
def test_regression_through_helpers(name):
    v = VEC_ARGS[name]
    check(regression_fit, v, v[::-1] * 2.0 + 1.0, rel=1e-9)


def sums_around_store(a):
    s1 = a.sum()
    a[0] = 5.0
    s2 = a.sum()
    return s1, s2, a.sum()


def sums_around_view_store(a):
    b = a[1:]
    s1 = a.sum()
    b[0] = 7.0  # writes a[1] through the view
    return s1, a.sum()


def sums_around_call(a):
    s1 = a.sum()
    bump(a)
    return s1, a.sum()


def sums_around_inplace(a):
    s1 = a.sum()
    a += 1.0
    return s1, a.sum()


def sums_around_rebinding(a):
    s1 = a.sum()
    a = a * 2.0
    return s1, a.sum()


def sums_in_a_loop(a, n):
    t = 0.0
    for i in range(n):
        t += a.sum() * a.sum()
        a[0] = a[0] + 1.0
    return t, a.sum()


def zeros_pair(n):
    a = np.zeros(n)
    b = np.zeros(n)
    a[0] = 1.0
    return a, b


@pytest.mark.parametrize("f", [sums_around_store, sums_around_view_store, sums_around_call, sums_around_inplace,
                               sums_around_rebinding])
@pytest.mark.parametrize("name", ["c", "step2", "rev"])
def test_reductions_around_writes_are_not_shared(f, name):
    check(f, VEC_ARGS[name])


def test_reductions_in_a_loop_that_writes():
    check(sums_in_a_loop, V.copy(), 4)


def test_two_zeros_stay_two_arrays():
    check(zeros_pair, 3)
    a, b = jitted(zeros_pair)(3)
    assert a is not b and b[0] == 0.0


def floordiv_in_branch(a, k):
    r = 0
    if k != 0:
        r = a.sum() // k
    return r + (a.sum() // k if k != 0 else 0)


def raises_first_then_repeats(a, n, k):
    return n // k + a.min() + a.min()


def repeats_then_raises(a, n, k):
    return a.min() + n // k + a.min()


INTS = np.arange(1, 8, dtype=np.int64)


@pytest.mark.parametrize("k", [0, 3, -2])
def test_expressions_raising_on_one_path_are_not_moved(k):
    check(floordiv_in_branch, INTS, k)
    for a in (INTS, INTS[:0]):
        check(raises_first_then_repeats, a, 7, k)  # ZeroDivisionError before the empty min's ValueError
        check(repeats_then_raises, a, 7, k)        # and the other way round


def sum_then_write_as_args(a):
    return plus_ten_times(a.sum(), bump(a))  # the sum is taken before bump writes a


def test_inlined_call_evaluates_a_read_before_a_later_argument_writes():
    for name in ["c", "rev", "one"]:
        check(sum_then_write_as_args, VEC_ARGS[name])
