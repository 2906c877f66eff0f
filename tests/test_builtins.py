"""Builtins and lists (issue 14, items 1 and 2) against CPython running the same function.

sum(), zip(), enumerate(), range() as a value, min/max/abs as function values, isinstance() against number types,
`x is None`, and lists where an array is meant: a list display or comprehension is a NumPy array in lorikeet (as in
Parakeet), so where CPython returns a list the compiled function returns the array np.array(that list) gives."""
import functools
import inspect

import numpy as np
import pytest

import lorikeet as lk
from helpers import J


def same(got, exp):
    """got (lorikeet) is exp (CPython) in value and kind; a list is compared as the array it becomes."""
    if isinstance(exp, list):
        exp = np.array(exp)
    if isinstance(exp, np.ndarray):
        assert isinstance(got, np.ndarray), f"expected an array, got {type(got).__name__} {got!r}"
        assert got.dtype == exp.dtype and got.shape == exp.shape, f"{got.dtype}{got.shape} != {exp.dtype}{exp.shape}"
        np.testing.assert_allclose(got, exp, rtol=1e-12, atol=1e-12)  # vector math: a few ulp
    elif isinstance(exp, tuple):
        assert isinstance(got, tuple) and len(got) == len(exp), f"expected {exp!r}, got {got!r}"
        for g, e in zip(got, exp):
            same(g, e)
    elif isinstance(exp, np.generic):
        assert isinstance(got, np.generic) and got.dtype == exp.dtype, f"expected {exp!r}, got {got!r}"
        assert got == pytest.approx(exp, rel=1e-12)
    else:  # a Python number, bool or None: the same Python type
        assert type(got) is type(exp), f"expected {type(exp).__name__} {exp!r}, got {type(got).__name__} {got!r}"
        assert got == pytest.approx(exp, rel=1e-12) if isinstance(exp, float) else got == exp


def check(fn, *args):
    exp = fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    same(J(fn)(*args), exp)
    return exp


def compile_error(fn, *args, line_text):
    """The CompileError names the line: its message shows the source line that holds line_text."""
    with pytest.raises(lk.CompileError) as e:
        J(fn)(*args)
    lines, first = inspect.getsourcelines(fn)
    lineno = first + next(i for i, s in enumerate(lines) if line_text in s)
    assert f"line {lineno}" in str(e.value), str(e.value)
    return str(e.value)


A = np.array([1.5, -2.0, 3.25, 4.0, -0.5])
B = np.array([2.0, 0.5, -1.0])
I8 = np.array([1, -2, 3, 4, 5], dtype=np.int8)
M = np.arange(12.0).reshape(3, 4)

# ---------------------------------------------------------------- sum


def sum_plain(a):
    return sum(a)


def sum_start(a, s):
    return sum(a, s)


def sum_start_kw(a):
    return sum(a, start=1.5)


def sum_range(n):
    return sum(range(n)), sum(range(2, n, 3)), sum(range(n, 0, -2), 7)


def sum_generator(a):
    return sum(x * x for x in a)


def sum_generator_range(n):
    return sum(i * i for i in range(n) if i % 3 != 0)


def sum_listcomp(a):
    return sum([x + 1.0 for x in a])


def sum_tuple(x, y):
    return sum((x, y, 3)), sum([x, y])


def sum_enumerate_zip(a, b):
    return sum(i * x for i, x in enumerate(a)), sum(x * y for x, y in zip(a, b))


@pytest.mark.parametrize("a", [A, I8, np.arange(6), np.array([True, False, True]), M],
                         ids=["f8", "i8", "i64", "bool", "2d"])
def test_sum_of_arrays(a):
    check(sum_plain, a)


def test_sum_of_an_empty_array_is_zero_of_the_items_type():
    # CPython gives start itself (the int 0) for no items; a compiled function's result type cannot depend on the
    # length, so it is 0 of the type a non-empty array gives (documented in USERGUIDE)
    got = J(sum_plain)(np.zeros(0))
    assert got == sum_plain(np.zeros(0)) and isinstance(got, np.float64)


def test_sum_with_start():
    check(sum_start, A, 10)
    check(sum_start, I8, 2)
    check(sum_start, np.arange(5), 0.5)
    check(sum_start, M, np.ones(4))
    check(sum_start_kw, A)


@pytest.mark.parametrize("n", [0, 1, 10, 1000])
def test_sum_of_ranges(n):
    check(sum_range, n)


def test_sum_of_generators_and_comprehensions():
    check(sum_generator, A)
    check(sum_generator_range, 20)
    check(sum_listcomp, A)
    check(sum_enumerate_zip, A, B)


def test_sum_of_tuples_and_lists():
    check(sum_tuple, 2, 0.5)
    check(sum_tuple, 2, 5)

# ---------------------------------------------------------------- enumerate and zip


def loop_enumerate(a):
    s = 0.0
    for i, x in enumerate(a):
        s += i * x
    return s


def loop_enumerate_start(a):
    s = 0
    for i, x in enumerate(a, 10):
        if x > 0:
            s += i
    return s


def loop_zip(a, b):
    s = 0.0
    n = 0
    for x, y in zip(a, b):  # stops at the shorter
        s += x * y
        n += 1
    return s, n


def loop_zip_three(a, b, n):
    s = 0.0
    for i, x, y in zip(range(n), a, b):
        s += i * (x - y)
    return s


def loop_enumerate_zip(a, b):
    s = 0.0
    for i, (x, y) in enumerate(zip(a, b)):
        s += i + x * y
    return s


def loop_enumerate_rows(m):
    t = 0.0
    for i, row in enumerate(m):
        t += i * row.sum()
    return t


def comp_zip(a, b):
    return np.array([x * y for x, y in zip(a, b)])


def comp_enumerate(a):
    return np.array([i * x for i, x in enumerate(a, 1)])


def comp_enumerate_range(n):
    return np.array([i * j for i, j in enumerate(range(3, n))])


def test_enumerate_in_loops():
    check(loop_enumerate, A)
    check(loop_enumerate_start, A)
    check(loop_enumerate_rows, M)


def test_zip_in_loops():
    check(loop_zip, A, B)
    check(loop_zip, B, A)
    check(loop_zip_three, A, B, 10)
    check(loop_zip_three, A, A, 2)
    check(loop_enumerate_zip, A, B)


def test_zip_and_enumerate_in_comprehensions():
    check(comp_zip, A, B)
    check(comp_enumerate, A)
    check(comp_enumerate_range, 9)


def zip_as_value(a):
    z = zip(a, a)
    return z


def test_zip_as_a_value_is_refused():
    assert "for loop or a comprehension" in compile_error(zip_as_value, A, line_text="z = zip(a, a)")

# ---------------------------------------------------------------- range as a value


def range_len(n):
    return len(range(n)), len(range(2, n, 3)), len(range(n, 0, -1)), len(range(n, 0))


def range_array(n):
    return np.array(range(n)), np.array(range(1, n, 2))


def range_helper(r):
    s = 0
    for x in r:
        s += x
    return s + len(r) + r[-1]


def range_passed(n):
    return range_helper(range(1, n))


def range_step_zero(n, k):
    return len(range(0, n, k))


@pytest.mark.parametrize("n", [0, 1, 7, 100])
def test_len_of_range(n):
    check(range_len, n)


def test_range_as_a_value():
    check(range_array, 8)
    # a range stored or passed is an int64 array: its items are NumPy int64, not Python ints (documented)
    got = J(range_passed)(10)
    assert got == range_passed(10) and isinstance(got, np.int64)


def test_range_step_zero_is_a_value_error():
    with pytest.raises(ValueError):
        range_step_zero(5, 0)
    with pytest.raises(ValueError):
        J(range_step_zero)(5, 0)
    check(range_step_zero, 10, 3)

# ---------------------------------------------------------------- min, max and abs as values


def reduce_min_max(x):
    return lk.reduce(min, x), lk.reduce(max, x)


def map_abs(x):
    return lk.map(abs, x)


def map_max(a, b):
    return lk.map(max, a, b)


def test_builtins_as_function_values():
    lo, hi = J(reduce_min_max)(A)
    assert lo == functools.reduce(min, A) and hi == functools.reduce(max, A)
    got = J(map_abs)(I8)
    np.testing.assert_array_equal(got, np.array([abs(v) for v in I8]))
    assert got.dtype == np.int8
    np.testing.assert_array_equal(J(map_max)(A[:3], B), np.array([max(x, y) for x, y in zip(A[:3], B)]))

# ---------------------------------------------------------------- isinstance


def kind_of(x):
    if isinstance(x, bool):
        return 0
    if isinstance(x, (int, float)):
        return 1
    if isinstance(x, np.ndarray):
        return 2
    return 3


def numpy_kind(x):
    return (isinstance(x, np.floating), isinstance(x, np.integer), isinstance(x, np.generic),
            isinstance(x, np.float32), isinstance(x, float), isinstance(x, (np.number, tuple)))


def double_numbers(x):
    if isinstance(x, (int, float)):
        return x * 2
    return x.sum()  # an array: this branch is never typed for numbers


@pytest.mark.parametrize("x", [True, 3, 2.5, np.float64(1.5), np.float32(1.5), np.int16(3), np.bool_(True), A],
                         ids=["bool", "int", "float", "f8", "f4", "i2", "np_bool", "array"])
def test_isinstance(x):
    check(kind_of, x)
    check(numpy_kind, x)


def test_isinstance_prunes_the_branch_not_taken():
    check(double_numbers, 4)
    check(double_numbers, 1.25)
    check(double_numbers, A)


def isinstance_unknown(x):
    return isinstance(x, np.dtype)


def test_isinstance_against_an_unknown_class():
    msg = compile_error(isinstance_unknown, 1.0, line_text="isinstance(x, np.dtype)")
    assert "isinstance() against numpy.dtype is not supported" in msg

# ---------------------------------------------------------------- is None


def twice_into(x, out=None):
    if out is None:
        out = np.empty_like(x)
    out[:] = x * 2
    return out


def scaled(x, scale=None):
    if scale is not None:
        x = x * scale
    return x


def none_chain(x, lo=None, hi=None):
    if lo is None:
        lo = x.min()
    if hi is None:
        hi = x.max()
    return hi - lo


def test_none_default_arguments():
    check(twice_into, A)
    buf = np.zeros_like(A)
    got = J(twice_into)(A, buf)
    assert got is not None and np.array_equal(buf, A * 2)
    check(scaled, A)
    check(scaled, A, 3)
    check(scaled, 2.0, 0.5)
    check(none_chain, A)
    check(none_chain, A, -10.0)
    check(none_chain, A, None, 1)


def none_in_a_conditional_expression(a, k=None, z=None):
    k = len(a) if k is None else k
    return a[:k].sum(), (a if z is None else a + z)


def axis_passed_on(m, axis=None):
    return m.sum(axis=axis), m.mean(axis=axis), np.cumsum(m, axis=axis), np.max(m, axis)


def zeros_of(n, dtype=np.int64):
    return np.zeros(n, dtype=dtype)


def ones_of(n, dtype=float):
    return np.ones(n, dtype=dtype)


def dtype_defaults_in_a_callee(n):
    return zeros_of(n), zeros_of(n, np.float32), ones_of(n), ones_of(n, np.int8)


def test_none_and_dtype_defaults_as_numpy_code_writes_them():
    check(none_in_a_conditional_expression, A)  # decided when compiling, as an if statement on `is None` is
    check(none_in_a_conditional_expression, A, 2, 1.5)
    for axis in (None, 0, 1, -1):
        check(axis_passed_on, M, axis)
    check(axis_passed_on, M)
    check(zeros_of, 3)
    check(zeros_of, 3, np.float32)
    check(ones_of, 2)
    check(dtype_defaults_in_a_callee, 2)


def none_in_a_loop(a):
    acc = None
    for x in a:
        if acc is None:
            acc = x
        else:
            acc = acc + x
    return acc


def is_between_arrays(a, b):
    return a is b


def test_none_that_a_loop_changes_is_a_compile_error():
    compile_error(none_in_a_loop, A, line_text="acc = x")


def test_is_between_values_is_a_compile_error():
    assert "against None only" in compile_error(is_between_arrays, A, A, line_text="return a is b")

# ---------------------------------------------------------------- lists are arrays


def list_of_numbers(x):
    return [x, x, 2 * x]


def list_of_ints():
    return [[1, 2], [3, 4], [5, 6]]


def list_of_mixed(x):
    return np.array([1, x]), np.array([x, 2.5]), np.array([True, x])


def list_of_arrays(a):
    return [a, a * 2, -a]


def list_comprehension(xs):
    return [x * x + 1 for x in xs]


def list_comprehension_range(n):
    return [i * 0.5 for i in range(n) if i % 2 == 0]


def list_used_locally(xs):
    ys = [x * 2 for x in xs]
    zs = [1.0, 2.0, 3.0]
    return ys[1] + len(ys) + zs[-1]


def list_index(a):
    return a[[0, 2, -1]]


def list_helper(v):
    return sum(v) * len(v)


def list_passed(x):
    return list_helper([x, 2.0, 3.0])


def list_as_sequence(a, n):
    z = np.zeros([n, 2])
    c = np.concatenate([a, a])
    return z.shape, c, min([a[0], a[1]]), len([1, 2, 3])


def list_of_range(n, a):
    return list(range(n)), list(a)


def test_list_displays_are_arrays():
    check(list_of_numbers, 1.5)
    check(list_of_numbers, 3)
    check(list_of_ints)
    check(list_of_mixed, np.int8(3))  # NumPy takes the Python numbers as int64 and float64 here, not as weak
    check(list_of_mixed, np.float32(1.5))
    check(list_of_arrays, A)
    check(list_of_range, 5, A)


def rows_scaled(a, b):
    return [x * b for x in a]


def rows_of_matrix(m):
    return [np.sin(r) + 1.0 for r in m]


def rows_from_range(n):
    return [np.arange(i, i + 3) * 2 for i in range(n)]


def rows_ragged(n):
    return [np.arange(i) for i in range(n)]


def test_comprehensions_of_arrays_stack_the_rows():
    check(rows_scaled, A, B)
    check(rows_of_matrix, M)
    check(rows_from_range, 4)
    with pytest.raises(ValueError):
        rows_ragged(3) and np.array(rows_ragged(3))
    with pytest.raises(ValueError):
        J(rows_ragged)(3)


def test_list_comprehensions_are_arrays():
    check(list_comprehension, A)
    check(list_comprehension_range, 9)
    check(list_used_locally, A)


def test_list_where_numpy_takes_a_sequence():
    check(list_index, A)
    # the callee gets an array, whose items are NumPy float64 (a float subclass), where CPython's are floats
    got = J(list_passed)(1.0)
    assert got == list_passed(1.0) and isinstance(got, float)
    check(list_as_sequence, A, 3)


def list_append(n):
    out = []
    for i in range(n):
        out.append(i)
    return out


def list_append_to_array(xs):
    ys = [x for x in xs]
    ys.append(1.0)
    return ys


def generator_returned(xs):
    return (x for x in xs)


def test_growing_a_list_is_a_compile_error():
    msg = compile_error(list_append, 3, line_text="out = []")
    assert "append" in msg
    compile_error(list_append_to_array, A, line_text="ys.append(1.0)")
    compile_error(generator_returned, A, line_text="return (x for x in xs)")

# ---- the operators that mean another thing for a list: + joins, * repeats, and the others raise ----

def list_repeated(n):
    return [0.0] * n, n * [1, 2], [[0.0, 1.0]] * n, len([0] * n), len([1.5] * -n), [True] * 2


def list_filled_in_a_loop(n):
    v = [0.0] * n
    for i in range(n):
        v[i] = i * 0.5
    w = [0] * n
    for i in range(n):
        w[i] = i * i
    return v, w


def lists_joined(x, n):
    a = [x, x]
    b = a + [3.0] * n
    return b, [1, 2] + [3], len(a + a), [i for i in range(n)] + [7] * 2


def list_variable_repeated(x, n):
    v = [x, 2 * x]
    w = v * n
    return w, v


def list_and_array(a):
    return [1.0, 2.0] + a, [1.0, 2.0] - a, a / [2.0, 4.0]  # the array's operators, as Python picks ndarray's


def list_times_array(a):
    return a * [2.0, 3.0]


def list_lengths(n):
    return len([0.0] * n), len(n * [1, 2] + [3]), len([[0.0, 1.0]] * n)


def test_a_list_repeats_and_joins_as_python_s():
    for n in (-2, 0, 1, 5):
        check(list_lengths, n)
    for n in (1, 3):  # an empty list is an array of its items' dtype, where np.array([]) is float64 (documented)
        check(list_repeated, n)
        check(list_filled_in_a_loop, n)
        check(lists_joined, 1.5, n)
        check(list_variable_repeated, 2.5, n)
    check(list_and_array, np.array([0.5, -1.0]))


def list_grown(x):
    v = [x, x]
    v += [3.0]
    return v


def list_times_float(x):
    return [x] * 2.0


def list_minus_number():
    return [1, 2] - 1


def list_negated():
    return -[1, 2]


def list_item_made_float():
    x = [1, 2, 3]
    x[0] = 1.5
    return x


def list_item_updated_float(n):
    x = [0] * n
    x[0] += 0.5
    return x


def list_sometimes():
    v = [1.0, 2.0]
    if len(v) > 1:
        v = np.ones(2)
    return v * 2


def test_what_python_refuses_or_keeps_for_a_list_is_a_compile_error():
    msg = compile_error(list_grown, 1.0, line_text="v += [3.0]")
    assert "holds a list" in msg
    compile_error(list_times_float, 1.0, line_text="[x] * 2.0")
    # NumPy's product in Python; refused, as lorikeet decides which names hold lists before it knows types
    assert "np.array" in compile_error(list_times_array, np.ones(2), line_text="a * [2.0, 3.0]")
    compile_error(list_minus_number, line_text="[1, 2] - 1")
    compile_error(list_negated, line_text="-[1, 2]")
    assert "storing" in compile_error(list_item_made_float, line_text="x[0] = 1.5")
    compile_error(list_item_updated_float, 2, line_text="x[0] += 0.5")
    assert "some paths" in compile_error(list_sometimes, line_text="return v * 2")


# ---------------------------------------------------------------- any and all


def any_all(a):
    return any(a), all(a), any(x > 3 for x in a), all(x > -5 for x in a)


def test_any_all():
    check(any_all, A)
    check(any_all, np.zeros(3))
