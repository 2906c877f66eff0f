"""NEP 50's scalar rules, for every kind of scalar lorikeet makes (issue 12, item 1). A Python int, float or bool
is weak: an operation with a NumPy value takes the NumPy value's dtype (an int8 array plus len(a) is int8).
CPython makes one wherever the code calls len(), reads a.shape[k], a.size, a.ndim, a.itemsize or a.nbytes,
counts with range(), converts with int(), float() or bool(), calls the math module or .item(), compares two
Python numbers, or calls a function that returns one; it stays one in a variable and through a return. A NumPy
function returns a NumPy scalar, which is strong even when its arguments were Python numbers.

Each row is a producer of a scalar, run in a function with an array `a` and a NumPy scalar `v` of each dtype,
and combined with them by every consumer (operators, comparisons, unary operators, returning it). The function
runs in CPython and compiled; every consumer's result must agree in value and in type (type(x) for scalars,
x.dtype for arrays)."""
import importlib.util
import math
import sys
import textwrap
import warnings

import numpy as np
import pytest

import lorikeet as lk

DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.int64, np.uint64, np.float16, np.float32, np.float64]

# (name, the Python scalar's kind, lines before the return, the expression that gives it)
PRODUCERS = [
    ("len", "int", "", "len(a)"),
    ("shape", "int", "", "a.shape[0]"),
    ("shape_unpacked", "int", "n, = a.shape", "n"),
    ("size", "int", "", "a.size"),
    ("ndim", "int", "", "a.ndim"),
    ("itemsize", "int", "", "a.itemsize"),
    ("nbytes", "int", "", "a.nbytes // a.itemsize"),
    ("scalar_size", "int", "", "v.size + v.ndim"),
    ("range_var", "int", "k = 0\nfor i in range(np.int8(1), len(a)):\n    k = i", "k"),
    ("int_of_numpy", "int", "", "int(v) + 1"),
    ("int_of_elem", "int", "", "int(a[1])"),
    ("item", "int", "", "int(a[1].item())"),
    ("math_floor", "int", "", "math.floor(float(a[1]) + 0.5)"),
    ("math_trunc", "int", "", "math.trunc(len(a) * 0.9)"),
    ("plain_helper", "int", "", "py_len(a)"),
    ("jitted_helper", "int", "", "jit_len(a)"),
    ("stored", "int", "m = len(a)\nm = m * 2", "m - 4"),
    ("float_of_numpy", "float", "", "float(v) + 0.5"),
    ("float_helper", "float", "", "py_three()"),
    ("math_sqrt", "float", "", "math.sqrt(len(a) + 1)"),
    ("bool_of_numpy", "bool", "", "bool(v)"),
    ("python_compare", "bool", "", "len(a) > 1"),
    ("not_numpy", "bool", "", "not a[0]"),
    ("compare_helper", "bool", "", "py_positive(len(a))"),
]

# consumers by the producer's kind: X is the producer's value, a the array, v the NumPy scalar
CONSUMERS = {
    "int": ["X", "a + X", "X * a", "v + X", "X - v", "a // X", "v * X", "X + X", "X // 2", "X / 2", "-X", "~X",
            "X > 1", "v < X", "a <= X", "abs(X)", "max(X, 2)", "X if X > 0 else 0", "np.square(X) * a"],
    "float": ["X", "a + X", "X * a", "v + X", "X - v", "a / X", "X + X", "X // 2", "-X", "X > 1", "v < X",
              "a <= X", "np.sqrt(X) * a"],
    "bool": ["X", "a + X", "v * X", "X + X", "X - X", "-X", "~X", "+X", "X + 1", "X * 2.5", "X > 0", "v == X",
             "(a > 1) & X", "not X", "np.logical_not(X)", "np.add(X, X)"],
}

HELPERS = '''
import math
import numpy as np
import lorikeet as lk


def py_len(a):
    return len(a)


def py_three():
    return 3.0


def py_positive(k):
    return k > 0


@lk.jit
def jit_len(a):
    return len(a)
'''


def consumer_source(name, pre, expr, kind):
    body = textwrap.indent(pre, "    ") + "\n" if pre else ""
    items = ", ".join("(" + c.replace("X", "x") + ")" for c in CONSUMERS[kind])
    return f"def {name}(a, v):\n{body}    x = {expr}\n    return ({items},)\n"


@pytest.fixture(scope="module")
def producers(tmp_path_factory):
    """The module of every producer's function, written to a file (lorikeet reads the source)."""
    src = HELPERS + "\n\n" + "\n\n".join(consumer_source("p_" + n, pre, e, k) for n, k, pre, e in PRODUCERS)
    path = tmp_path_factory.mktemp("nep50") / "nep50_producers.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("lk_nep50_producers", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    yield mod
    del sys.modules[spec.name]


def describe(x):
    return f"{x.dtype} array {x.tolist()}" if isinstance(x, np.ndarray) else f"{type(x).__name__} {x!r}"


def same(got, want):
    if isinstance(want, np.ndarray):
        return isinstance(got, np.ndarray) and got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True)
    if type(got) is not type(want):
        return False
    return got == want or (isinstance(want, (float, np.floating)) and math.isnan(want) and math.isnan(got))


def reference(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name,kind,pre,expr", PRODUCERS, ids=[p[0] for p in PRODUCERS])
def test_python_scalars_are_weak(producers, name, kind, pre, expr, dtype):
    fn = getattr(producers, "p_" + name)
    a = np.array([1, 2, 3]).astype(dtype)
    v = dtype(2)
    want = reference(fn, a, v)
    got = lk.jit(fn)(a, v)
    bad = [f"{c.replace('X', expr)}: lorikeet {describe(g)}, CPython {describe(w)}"
           for c, g, w in zip(CONSUMERS[kind], got, want) if not same(g, w)]
    assert not bad, "\n".join(bad)


# ---- NumPy functions of Python scalars give strong NumPy scalars ----

def square_times(a):
    return np.square(300) * a


def numpy_scalars_compare(x):
    return np.int32(5) >= np.square(2147483647), np.add(True, True), np.sqrt(True), np.maximum(x, 2) + np.int8(1)


def numpy_scalar_kept(a, k):
    s = np.add(k, 1)   # an int64 NumPy scalar, in a variable
    return a + s, np.multiply(k, a), np.floor(k) * a


def test_numpy_function_of_python_int_is_strong():
    a = np.ones(2, np.int8)
    got, want = lk.jit(square_times)(a), square_times(a)
    assert got.dtype == want.dtype == np.int64 and got.tolist() == want.tolist() == [90000, 90000]
    for got, want in zip(lk.jit(numpy_scalars_compare)(3), numpy_scalars_compare(3)):
        assert same(got, want), (describe(got), describe(want))
    for got, want in zip(lk.jit(numpy_scalar_kept)(a, 7), numpy_scalar_kept(a, 7)):
        assert same(got, want), (describe(got), describe(want))


# ---- comparisons of an integer dtype with a Python int are by value (NumPy 2 never converts the int) ----

def compare_all(x, k):
    return x < k, x <= k, x == k, x != k, x > k, x >= k, k < x, k == x, k >= x


def compare_len(x, a):
    n = len(a)
    return x < n, x == n, x > n, n <= x, n != x


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64])
@pytest.mark.parametrize("x,k", [(3, 300), (3, -1), (0, -2**63), (127, 2**63 - 1), (1, 1), (100, 70000)])
def test_integer_compared_with_python_int_by_value(dtype, x, k):
    x = dtype(x)
    assert lk.jit(compare_all)(x, k) == compare_all(x, k)
    arr = np.array([x, 0], dtype)
    got, want = lk.jit(compare_all)(arr, k), compare_all(arr, k)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.tolist() == w.tolist()


def compare_literals(x):
    return x > -6, x >= -6, x < -6, x != -6, -6 < x, x < 300, x == 2**63 - 1


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.uint64, np.int64])
def test_integer_compared_with_out_of_range_literal_by_value(dtype):
    for x in (dtype(0), dtype(5), np.array([0, 5], dtype)):
        got, want = lk.jit(compare_literals)(x), compare_literals(x)
        assert [describe(g) for g in got] == [describe(w) for w in want]


def test_integer_compared_with_len_by_value():
    a = np.zeros(300)
    for dtype in (np.uint8, np.int8, np.uint64):
        x = dtype(44)  # 300 wraps to 44 in uint8
        got, want = lk.jit(compare_len)(x, a), compare_len(x, a)
        assert got == want and [type(g) for g in got] == [type(w) for w in want]


# ---- Python bools from comparisons and bool() add like ints ----

def count_positive(x):
    return (x > 0) + (x > 1) + (x > 2)


def bool_twice(x):
    b = bool(x)
    return b + b, -(x > 0), ~(x > 0), np.int8(2) + ((x < 3) + 1)


def test_comparisons_of_python_numbers_are_python_bools():
    for x in (5, 1, -1, 2.5):
        assert lk.jit(count_positive)(x) == count_positive(x)
        assert type(lk.jit(count_positive)(x)) is int
        got, want = lk.jit(bool_twice)(x), bool_twice(x)
        assert [describe(g) for g in got] == [describe(w) for w in want]


def chained(x, a):
    return 0 < x < 10, 0 < a[0] < 10


def test_chained_comparison_is_python_bool_of_python_numbers():
    a = np.array([3], np.int8)
    got, want = lk.jit(chained)(4, a), chained(4, a)
    assert [describe(g) for g in got] == [describe(w) for w in want]


# ---- a weak value through a return and a call ----

def loop_sum(a):
    s = 0
    for i in range(len(a)):
        s = s + i
    return s


def calls_loop_sum(a):
    return a + loop_sum(a), loop_sum(a)


def test_weak_through_calls_and_returns():
    a = np.array([1, 2, 3], np.int16)
    got, want = lk.jit(calls_loop_sum)(a), calls_loop_sum(a)
    assert [describe(g) for g in got] == [describe(w) for w in want]
    assert type(lk.jit(loop_sum)(a)) is int


def numpy_results(a):
    return a.sum(), a[0], np.float64(2.5), np.int64(3), a[0] > 1, np.sum(a > 1) > 0


def test_strong_int64_float64_and_bool_results_are_numpy_scalars():
    a = np.array([1, 2, 3])
    got, want = lk.jit(numpy_results)(a), numpy_results(a)
    assert [describe(g) for g in got] == [describe(w) for w in want]


# ---- np.clip and np.where of integers with Python ints beyond the dtype's range (r14) ----

def clip_literals(a):
    return np.clip(a, -1, 9), a.clip(-300, 300), np.clip(a, -5, 3)


def clip_by(a, lo, hi):
    return np.clip(a, lo, hi)


def where_literals(a):
    return np.where(a > 3, a, -1), np.where(a > 3, 300, a), np.where(a > 3, -1, 300)


def where_by(a, k):
    return np.where(a > 3, a, k)


def outcome(fn, *args):
    try:
        return describe(reference(fn, *args))
    except OverflowError as e:
        return f"OverflowError: {str(e).splitlines()[0]}"  # lorikeet adds the line that raised


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.uint16, np.int32, np.uint64, np.int64])
def test_clip_and_where_with_out_of_range_python_ints_are_numpys(dtype):
    # clip: a lower bound below the range (an upper one above it) is the range's end, the other way round an
    # OverflowError when it runs; where: a C cast, which wraps (np.where(c, uint8_array, -1) holds 255)
    a = np.array([0, 5, 100], dtype)
    for fn in (clip_literals, where_literals):
        try:
            want = reference(fn, a)
        except OverflowError:  # NumPy 2.5 refuses what NumPy 2.4 casts: an out-of-range literal is a CompileError
            assert fn is where_literals and np.lib.NumpyVersion(np.__version__) >= "2.5.0"
            with pytest.raises(lk.CompileError, match="out of bounds for"):
                lk.jit(fn)(a)
            continue
        got = lk.jit(fn)(a)
        assert [describe(g) for g in got] == [describe(w) for w in want]
    for lo, hi in [(-1, 9), (-1000, 1000), (-2**63, 2**63 - 1), (300, 400), (-5, -1), (2, 3)]:
        assert outcome(lk.jit(clip_by), a, lo, hi) == outcome(clip_by, a, lo, hi), (lo, hi)
    for k in (-1, 300, 7):
        assert outcome(lk.jit(where_by), a, k) == outcome(where_by, a, k), k
    assert outcome(lk.jit(clip_by), dtype(5), -1, 9) == outcome(clip_by, dtype(5), -1, 9)


WHERE_AS_IN_NUMPY_2_5 = textwrap.dedent("""
    import sys
    import numpy as np
    _where = np.where

    def where_2_5(c, x, y):  # NumPy 2.5's rule: a Python int operand must fit an integer result dtype
        dt = np.result_type(*(v for v in (x, y) if not isinstance(v, int)))
        for v in (x, y):
            if isinstance(v, int) and not isinstance(v, bool) and dt.kind in "iu" and \\
                    not np.iinfo(dt).min <= v <= np.iinfo(dt).max:
                raise OverflowError(f"Python integer {v} out of bounds for {dt}")
        return _where(c, x, y)

    np.where = where_2_5  # before lorikeet asks NumPy which rule it follows
    import lorikeet as lk
    sys.path.insert(0, sys.argv[1])
    from test_nep50 import where_by, where_literals
    a = np.array([0, 5, 100], np.uint8)
    for k in (-1, 300, 7):
        try:
            print(k, lk.jit(where_by)(a, k).tolist())
        except OverflowError as e:
            print(k, "OverflowError", str(e).splitlines()[0])
    try:
        lk.jit(where_literals)(a)
    except lk.CompileError as e:
        print("literals: CompileError", str(e).splitlines()[0])
    """)


def test_where_follows_the_rule_of_the_numpy_it_runs_with():
    """NumPy 2.5's np.where checks a Python int against the integer result dtype, as operators do (NumPy 2.4 casts
    it, wrapping): lorikeet asks the NumPy it is loaded with. Here 2.5's rule is put in front of np.where before
    lorikeet is imported: a Python int argument out of range raises OverflowError when the call runs, a literal
    is a CompileError naming it, and one in range is used."""
    import os
    import subprocess
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(here, "..", "pyshim"), here,
                                                        os.environ.get("PYTHONPATH", "")]), LORIKEET_CACHE="0")
    out = subprocess.run([sys.executable, "-c", WHERE_AS_IN_NUMPY_2_5, here], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "-1 OverflowError Python integer -1 out of bounds for uint8",
        "300 OverflowError Python integer 300 out of bounds for uint8",
        "7 [7, 5, 100]",
        "literals: CompileError Python integer -1 out of bounds for uint8",
    ], out.stdout


# ---- a Python int that is not a literal must fit the integer dtype it meets (NumPy 2: OverflowError) ----

def int_arg_ops(a, v, k):
    return a + k, k * a, v - k, a // k, v % k, a & k, k | v, a << (k & 3), np.maximum(a, k), a / k


def constructors(k):
    return np.int8(k), np.uint8(k), np.int16(k), np.uint16(k), np.int32(k), np.uint32(k), np.uint64(k)


def fills(a, k):
    return np.full(2, k, np.uint64), np.full(2, k, np.int32), np.full((2,), k, dtype=np.uint8), np.full_like(a, k)


def len_ops(a, v, b):
    return a + len(b), v * b.shape[0], a - b.size


def range_sum(v, n):
    s = v
    for i in range(n):
        s = s + i
    return s


def in_place(a, k):
    a += k
    return a


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.uint64, np.int64])
@pytest.mark.parametrize("k", [3, 127, 128, 255, 256, -1, -129, 70000, 2**33, -2**40])
def test_python_int_beyond_the_dtype_raises_overflow_error(dtype, k):
    # an argument, len(), a shape, a range variable: where it does not fit the dtype of the integer operand,
    # of np.int8(k) or of np.full(n, k, dtype), NumPy 2 raises OverflowError; lorikeet did wrap
    a, v = np.array([5, 7], dtype), dtype(9)
    assert outcome(lk.jit(int_arg_ops), a, v, k) == outcome(int_arg_ops, a, v, k), k
    if 0 <= k <= 300:
        b = np.zeros(k)
        assert outcome(lk.jit(len_ops), a, v, b) == outcome(len_ops, a, v, b), k
        assert outcome(lk.jit(range_sum), v, k) == outcome(range_sum, v, k), k
    assert outcome(lk.jit(in_place), a.copy(), k) == outcome(in_place, a.copy(), k), k
    assert outcome(lk.jit(fills), a, k) == outcome(fills, a, k), k
    assert outcome(lk.jit(constructors), k) == outcome(constructors, k), k


# ---- a comprehension's range variable is a Python int, as a for loop's is ----

def comprehension_of_range(s, a):
    return np.array([i - s for i in range(3)]), np.array([[i * s + j for j in range(2)] for i in range(2)]), \
        np.array([i + a[0] for i in range(1, 4, 2) if i > 1])


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.uint32, np.uint64, np.float32, np.float16, np.int64])
def test_comprehension_range_variable_is_weak(dtype):
    s, a = dtype(5), np.array([2], dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got, want = lk.jit(comprehension_of_range)(s, a), comprehension_of_range(s, a)
    assert [describe(g) for g in got] == [describe(w) for w in want]


# ---- lk.imap and lk.ireduce give fn Python ints, as range does; Python numbers combined stay Python numbers ----

def imap_ireduce(a, s):
    return (lk.imap(lambda i: i + s, 3), lk.imap(lambda i, j: i * j - s, (2, 2)),
            lk.ireduce(lambda i: i, lambda x, y: x + y, a.shape, 0) * a,
            lk.ireduce(lambda i: i * 0.5, lambda x, y: x + y, 4, 0),
            lk.ireduce(lambda i: a[i], lambda x, y: x + y, 2, 0),
            lk.ireduce(lambda i: i, lambda x, y: x + y, 3, s))


def imap_ireduce_in_python(a, s):
    """The same in CPython: fn gets Python ints (np.ndindex's); the values are combined as functools.reduce
    combines them."""
    import functools
    return (np.array([i + s for i in range(3)]), np.array([[i * j - s for j in range(2)] for i in range(2)]),
            functools.reduce(lambda x, y: x + y, range(a.shape[0]), 0) * a,
            functools.reduce(lambda x, y: x + y, [i * 0.5 for i in range(4)], 0),
            functools.reduce(lambda x, y: x + y, [a[i] for i in range(2)], 0),
            functools.reduce(lambda x, y: x + y, range(3), s))


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.uint32, np.float32])
def test_imap_and_ireduce_indices_are_python_ints(dtype):
    a, s = np.array([1, 2], dtype), dtype(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got, want = lk.jit(imap_ireduce)(a, s), imap_ireduce_in_python(a, s)
    assert [describe(g) for g in got] == [describe(w) for w in want]


# ---- a math function of integers of several dtypes computes in the widest of their own float types ----

def arctan2_of(a, b):
    return np.arctan2(a, b)


def hypot_of(a, b):
    return np.hypot(a, b)


def copysign_of(a, b):
    return np.copysign(a, b)


def math_with_python_numbers(a):
    return np.arctan2(a, 3), np.hypot(2, a), np.arctan2(a, 0.5)


MIXED = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint64, np.float16, np.float32]


def logaddexp_of(a, b):
    return np.logaddexp(a, b)


def logaddexp2_of(a, b):
    return np.logaddexp2(a, b)


@pytest.mark.parametrize("fn", [arctan2_of, hypot_of, copysign_of, logaddexp_of, logaddexp2_of])
@pytest.mark.parametrize("x", MIXED, ids=lambda d: np.dtype(d).name)
def test_a_math_function_of_mixed_integers_takes_numpys_loop(fn, x):
    # NumPy picks the first loop every operand casts to safely: uint8 and int8 give float16, where their
    # promotion (int16) would give float32 (fuzz seed 921391: np.arctan2(np.uint8(3), int8_array))
    a = np.array([1, 0, 1, 1], dtype=x)
    for y in MIXED:
        b = np.array([1, 1, 0, 1], dtype=y)
        for args in ((a, b), (a[0], b), (a, b[3])):
            want = fn(*args)
            got = lk.jit(fn)(*args)
            assert np.asarray(got).dtype == np.asarray(want).dtype, (np.dtype(y).name, type(args[0]))
            np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=1e-3)


@pytest.mark.parametrize("x", MIXED, ids=lambda d: np.dtype(d).name)
def test_a_math_function_with_python_numbers_promotes_as_numpy(x):
    a = np.array([1, 0, 1], dtype=x)
    for got, want in zip(lk.jit(math_with_python_numbers)(a), math_with_python_numbers(a)):
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-3)
