"""Exceptions where CPython and NumPy raise them (issue 12, item 3): every test runs the same function under
CPython + NumPy and compiled, and compares the result, the exception's class and the state of the arguments."""
import math
import os

import numpy as np
import pytest

import lorikeet as lk
from helpers import assert_compile_error, skip_on_gpu

HERE = os.path.basename(__file__)


# ---------------------------------------------------------------- returning a function value (r06)


def square(y):
    return y * y


def returns_lambda(x):
    return lambda y: y + x


def returns_global_function(x):
    return square


def returns_nested_def(x):
    def inner(y):
        return y * x
    return inner


def returns_function_in_tuple(x):
    return (x, (square, 1))


def calls_a_returned_function(x):
    f = picks_square(x)
    return f(x)


def picks_square(x):
    return square


@pytest.mark.parametrize("f, line", [(returns_lambda, "return lambda y: y + x"),
                                     (returns_global_function, "return square"),
                                     (returns_nested_def, "return inner"),
                                     (returns_function_in_tuple, "return (x, (square, 1))")])
def test_returning_a_function_is_a_compile_error_naming_the_line(f, line):
    assert callable(f(3)) or callable(f(3)[1][0])  # CPython returns a function, which lorikeet cannot box
    msg = assert_compile_error(f, line, 3)
    assert "returns a function" in msg


def test_a_callee_may_return_a_function_to_its_caller():
    assert lk.jit(calls_a_returned_function)(3) == calls_a_returned_function(3) == 9


# ---------------------------------------------------------------- folded results keep what may raise (r05)


def isnan_of_floordiv(a, b):
    return np.isnan(a // b)


def isfinite_of_mod(a, b):
    return np.isfinite(a % b)


def isinf_of_floordiv(a, b):
    return np.isinf(a // b)


def math_isnan_of_mod(a, b):
    return math.isnan(a % b)


def len_of_tuple_with_division(a, b):
    return len((a // b, a))


def outcome(f, *args):
    """What f(*args) gives: ('value', v) or ('raises', the exception's class)."""
    try:
        return "value", f(*args)
    except Exception as e:  # noqa: BLE001 - the class is what is compared
        return "raises", type(e)


@pytest.mark.parametrize("f", [isnan_of_floordiv, isfinite_of_mod, isinf_of_floordiv, math_isnan_of_mod,
                               len_of_tuple_with_division])
@pytest.mark.parametrize("b", [0, 3, -2])
def test_a_folded_result_still_raises_as_cpython_does(f, b):
    want = outcome(f, 7, b)
    assert outcome(lk.jit(f), 7, b) == want
    assert (want[0] == "raises") == (b == 0)


def test_an_array_division_feeding_isnan_raises_as_the_division_alone_does():
    # integer // by zero raises on arrays too (a documented difference from NumPy, docs/USERGUIDE.md): fusing
    # np.isnan's constant result must not drop the division
    a, b = np.array([5, 6]), np.array([1, 0])
    with pytest.raises(ZeroDivisionError):
        lk.jit(lambda_free_floordiv)(a, b)
    with pytest.raises(ZeroDivisionError):
        lk.jit(isnan_of_floordiv)(a, b)
    b[1] = 2
    np.testing.assert_array_equal(lk.jit(isnan_of_floordiv)(a, b), isnan_of_floordiv(a, b))


def lambda_free_floordiv(a, b):
    return a // b


# ---------------------------------------------------------------- var and std take ddof (docs/USERGUIDE.md)


def var_ddof_arg(a, d):
    return np.var(a, ddof=d)


def std_ddof_arg(a, d):
    return np.std(a, ddof=d)


def var_method_ddof_arg(a, d):
    return a.var(ddof=d)


def std_method_ddof_arg(a, d):
    return a.std(ddof=d)


def var_ddof_variable(a, d):
    k = d + 0
    return np.var(a, ddof=k)


def var_ddof_positional(a, d):
    return np.var(a, None, None, None, d)


def std_method_ddof_positional(a, d):
    return a.std(None, None, None, d)


def var_axis0_ddof(a, d):
    return np.var(a, axis=0, ddof=d)


def std_axis1_ddof(a, d):
    return np.std(a, axis=1, ddof=d)


def var_method_axis1_ddof(a, d):
    return a.var(1, ddof=d)


def std_method_axis0_keepdims_ddof(a, d):
    return a.std(axis=0, ddof=d, keepdims=True)


def var_ddof_literal(a, d):
    return np.var(a, ddof=1) + a.std(ddof=2) * 0


VAR_STD = [var_ddof_arg, std_ddof_arg, var_method_ddof_arg, std_method_ddof_arg, var_ddof_variable,
           var_ddof_positional, std_method_ddof_positional, var_ddof_literal]
VAR_STD_AXIS = [var_axis0_ddof, std_axis1_ddof, var_method_axis1_ddof, std_method_axis0_keepdims_ddof]


def same_as_numpy(got, want):
    assert np.asarray(got).dtype == np.asarray(want).dtype and np.shape(got) == np.shape(want)
    rtol = 1e-5 if np.asarray(want).dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=rtol)


@pytest.mark.parametrize("f", VAR_STD + VAR_STD_AXIS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
@pytest.mark.parametrize("ddof", [0, 1, 2, 1.5, np.int32(1)])
def test_var_and_std_take_ddof_as_numpy_does(f, dtype, ddof):
    a = (np.arange(20).reshape(4, 5) ** 1.5).astype(dtype)
    if f not in VAR_STD_AXIS:
        a = a.ravel()
    same_as_numpy(lk.jit(f)(a, ddof), f(a, ddof))


def var_ddof_array(a):
    return np.var(a, ddof=a)


def test_an_array_ddof_is_a_compile_error():
    assert_compile_error(var_ddof_array, "return np.var(a, ddof=a)", np.arange(3.0))


# ---------------------------------------------------------------- a[idx] = v writes nothing when it raises


def store_through_index_array(a, idx, v):
    a[idx] = v


def store_through_index_array_in_prange(a, idx, v):
    for r in lk.prange(a.shape[0]):
        row = a[r]
        row[idx] = v


def state_after(f, a, *args):
    """(outcome, a's contents afterwards)"""
    got = outcome(f, a, *args)
    return got[0], (got[1] if got[0] == "raises" else None), a.tolist()


@pytest.mark.parametrize("idx, v", [([0, 10], 5.0), ([1, -4], 5.0), ([2, 0, 3], 5.0), ([1, 10], [1.0, 2.0]),
                                    ([10, 1], [1.0, 2.0]), ([0, 2], [1.0, 2.0, 3.0]), ([2, -1], [1.0, 2.0]),
                                    ([0, 1], 6.0), ([1], [1.0, 2.0]), ([1], [4.0])])
def test_an_index_array_store_checks_every_index_before_writing(idx, v):
    idx, v = np.array(idx), np.asarray(v)
    want = state_after(store_through_index_array, np.zeros(3), idx, v)
    assert state_after(lk.jit(store_through_index_array), np.zeros(3), idx, v) == want


def test_an_index_array_store_in_a_prange_row_checks_first():
    skip_on_gpu("an index-array store in a prange body copies the index array first (NumPy's order), an allocation "
                "the gpu backend cannot make inside a kernel yet: a CompileError naming the line")
    idx, v = np.array([0, 7]), 5.0
    want = state_after(store_through_index_array_in_prange, np.zeros((4, 3)), idx, v)
    assert want[0] == "raises"
    got = state_after(lk.jit(store_through_index_array_in_prange), np.zeros((4, 3)), idx, v)
    assert got == want


# ---------------------------------------------------------------- the gpu backend's kernels for the above


def map_isnan_of_floordiv(a, b):
    return lk.map(lambda x, y: np.isnan(x // y), a, b)


GPU_CASES = [(store_through_index_array, (np.zeros(4), np.array([0, 2]), 5.0)),
             (map_isnan_of_floordiv, (np.arange(4), np.arange(1, 5))),
             (isnan_of_floordiv, (np.arange(4), np.arange(1, 5))),
             ("writes_in_prange_if", (np.ones(3), np.zeros(3), True)),
             ("narrows_in_prange", (np.zeros(3, np.int8), np.arange(3))),
             ("narrows_in_prange", (np.zeros(3, np.int16), np.arange(3.0)))]


def read_only(a):
    a.flags.writeable = False
    return a


@pytest.mark.parametrize("f, args", GPU_CASES)
def test_the_kernels_compile_with_nvrtc(f, args):
    from test_gpu_codegen import NVRTC, nvrtc_compile
    if NVRTC is None:
        pytest.skip("no NVRTC on this machine")
    if f == "writes_in_prange_if":  # defined further down
        f, args = globals()[f], (read_only(args[0]),) + args[1:]
    elif isinstance(f, str):
        f = globals()[f]
    src = lk.jit(f).inspect_cuda(*args)
    ok, log = nvrtc_compile(src, "sm_90")
    assert ok, log


# ---------------------------------------------------------------- writes into read-only arrays (r04)


def writes_if(a, b, c):
    b[0] = 5.0
    if c:
        a[0] = 1.0
    return a.sum()


def writes_slice_if(a, b, c):
    b[0] = 5.0
    if c:
        a[1:] = 0.0
    return a.sum()


def updates_in_place_if(a, b, c):
    b[0] = 5.0
    if c:
        a += 1.0
    return a.sum()


def writes_through_index_array_if(a, b, c):
    b[0] = 5.0
    if c:
        a[np.array([0, 1])] = 2.0
    return a.sum()


def writes_through_mask_if(a, b, c):
    b[0] = 5.0
    if c:
        a[a > 0] = 2.0
    return a.sum()


def writes_a_view_if(a, b, c):
    b[0] = 5.0
    if c:
        v = a[1:]
        v[0] = 1.0
    return a.sum()


def write_first(x):
    x[0] = 1.0


def callee_writes_if(a, b, c):
    b[0] = 5.0
    if c:
        write_first(a)
    return a.sum()


def value_raises_before_the_write(a, b, c):
    if c:
        a[0] = b[10]
    return a.sum()


def index_raises_before_the_write(a, b, c):
    if c:
        a[int(b[10])] = 1.0
    return a.sum()


def writes_in_a_loop_after_other_writes(a, b, c):
    for i in range(3):
        b[i] = 7.0
        if c and i == 1:
            a[i] = b[i]
    return a.sum()


def writes_in_prange_if(a, b, c):
    for i in lk.prange(a.shape[0]):
        b[i] = 7.0
        if c:
            a[i] = 2.0
    return b.sum()


READONLY_WRITERS = [writes_if, writes_slice_if, updates_in_place_if, writes_through_index_array_if,
                    writes_through_mask_if, writes_a_view_if, callee_writes_if, value_raises_before_the_write,
                    index_raises_before_the_write, writes_in_a_loop_after_other_writes]


def readonly_run(f, c):
    """(outcome, the read-only a afterwards, b afterwards)"""
    a = np.ones(3)
    a.flags.writeable = False
    b = np.zeros(3)
    got = outcome(f, a, b, c)
    if got[0] == "raises":
        return got, a.tolist(), b.tolist()
    return ("value", float(got[1])), a.tolist(), b.tolist()


@pytest.mark.parametrize("f", READONLY_WRITERS)
@pytest.mark.parametrize("c", [False, True])
def test_a_write_into_a_read_only_array_raises_where_it_runs(f, c):
    want = readonly_run(f, c)
    assert readonly_run(lk.jit(f), c) == want
    if not c:
        assert want[0][0] == "value"


@pytest.mark.parametrize("f, message", [(writes_if, "assignment destination is read-only"),
                                        (updates_in_place_if, "output array is read-only")])
def test_the_read_only_error_names_the_write_in_numpy_s_words(f, message):
    a = np.ones(3)
    a.flags.writeable = False
    with pytest.raises(ValueError) as want:
        f(a, np.zeros(3), True)
    with pytest.raises(ValueError) as got:
        lk.jit(f)(a, np.zeros(3), True)
    assert str(want.value) == message and str(got.value).startswith(message)
    assert f"{HERE}\", line" in str(got.value)


@pytest.mark.parametrize("c", [False, True])
def test_a_prange_writing_a_read_only_array_raises_only_when_it_writes(c):
    a = read_only(np.ones(3))
    want = outcome(writes_in_prange_if, a, np.zeros(3), c)
    got = outcome(lk.jit(writes_in_prange_if), a, np.zeros(3), c)
    assert got == want and a.tolist() == [1.0, 1.0, 1.0]


# ---------------------------------------------------------------- numbers stored into integer arrays (NumPy 2's setitem)


def store_element(a, v):
    a[1] = v


def store_broadcast(a, v):
    a[1:] = v


def store_index_array(a, v):
    a[np.array([0, 2])] = v


def store_mask(a, v):
    a[np.array([True, False, True])] = v


INTS = [-2**63, -2**40, -129, -128, -1, 0, 127, 128, 255, 256, 2**31, 2**32 + 5, 2**63 - 1, 2**64 - 1]
FLOATS = [0.5, -0.7, -1.5, 300.9, -129.0, 2.0**31, float("nan"), float("inf"), -float("inf"), 1e19, 1e20, -1e19]


def values_of(kind):
    """The test values representable exactly as kind (int, float or a NumPy scalar type)."""
    if kind is int:
        return [v for v in INTS if -2**63 <= v < 2**63]
    if kind is float:
        return FLOATS + [float(v) for v in INTS[1:-1]]
    if np.issubdtype(kind, np.floating):
        vals = [kind(v) for v in FLOATS + INTS[1:-1]]
        return [v for v in vals if not np.isfinite(v) or float(v) in FLOATS or float(v) in INTS]
    info = np.iinfo(kind)
    return [kind(v) for v in INTS if info.min <= v <= info.max]


def numpy_defines(f, kind, dst, v):
    """NumPy's C cast of a NumPy float that does not fit (NaN, an infinity, beyond int32 into an unsigned array,
    beyond the dtype in the index forms, which cast as arrays do) is the platform's."""
    if kind not in (np.float32, np.float64):
        return True
    if f in (store_index_array, store_mask):
        info = np.iinfo(dst)
        return bool(np.isfinite(v)) and info.min <= float(v) < info.max + 1.0
    if np.dtype(dst).kind == "u":  # x86's conversions differ beyond int32 by the dtype's width
        return bool(np.isfinite(v)) and -2.0**31 <= float(v) < 2.0**31
    return True


def stored(f, dst, v):
    a = np.zeros(3, dst)
    try:
        f(a, v)
    except Exception as e:  # noqa: BLE001 - the class is what is compared
        return type(e), a.tolist()
    return None, a.tolist()


# the index forms share the element form's conversion: two dtypes cover them
STORE_FORMS = [(f, dst) for f in (store_element, store_broadcast)
               for dst in (np.int8, np.uint8, np.int16, np.uint32, np.int64, np.uint64)] + \
              [(f, dst) for f in (store_index_array, store_mask) for dst in (np.int8, np.uint8)]


@pytest.mark.parametrize("f, dst", STORE_FORMS)
@pytest.mark.parametrize("kind", [int, float, np.int8, np.uint8, np.int32, np.int64, np.uint64, np.float32,
                                  np.float64])
def test_a_number_stored_into_an_integer_array_is_converted_as_numpy_does(f, dst, kind):
    jf = lk.jit(f)
    with np.errstate(all="ignore"):
        for v in values_of(kind):
            if numpy_defines(f, kind, dst, v):
                assert stored(jf, dst, v) == stored(f, dst, v), (dst, kind, v)


def narrows_in_a_loop(out, x):
    for i in range(x.shape[0]):
        out[i] = x[i]


def test_a_loop_storing_wider_values_raises_at_the_first_that_does_not_fit():
    x = np.array([1, 2, 300, 4])
    want = stored(lambda a, v: narrows_in_a_loop(a, v), np.int8, x)
    assert want[0] is OverflowError
    out = np.zeros(4, np.int8)
    with pytest.raises(OverflowError) as e:
        lk.jit(narrows_in_a_loop)(out, x)
    assert "Python integer 300 out of bounds for int8" in str(e.value)
    assert out.tolist() == [1, 2, 0, 0]


def test_the_index_error_comes_before_the_overflow_as_in_numpy():
    a = np.zeros(3, np.int8)
    with pytest.raises(IndexError):
        store_at(a, 10, 300)
    with pytest.raises(IndexError):
        lk.jit(store_at)(a, 10, 300)
    with pytest.raises(OverflowError):
        lk.jit(store_at)(a, 2, np.int64(300))


def store_at(a, i, v):
    a[i] = v


def narrows_in_prange(out, x):
    for i in lk.prange(x.shape[0]):
        out[i] = x[i]


@pytest.mark.parametrize("x", [np.array([1, 2, 300, 4]), np.array([1.0, 2.0, np.nan, 4.0])])
def test_a_prange_storing_values_that_do_not_fit_raises_as_numpy_does(x):
    want = stored(narrows_in_prange, np.int8, x)
    got = stored(lk.jit(narrows_in_prange), np.int8, x)
    assert got[0] is want[0] and want[0] in (OverflowError, ValueError)


# ---------------------------------------------------------------- a[i] = value: the value first (fuzz F5)

def store_sum_at(a, b, c, k):
    a[k, None] = b + c
    return a


def store_sum_in_row(a, b, c, k):
    a[k, :] = b + c
    return a


def store_sum_in_slice(a, b, c, k):
    a[k:k + 1] = b + c
    return a


def store_in_prange(a, b, c, k):
    for r in lk.prange(a.shape[0]):
        a[r + k, None] = b[r] + c[r]
    return a


@pytest.mark.parametrize("f, a, b, c", [
    (store_sum_at, np.zeros(2), np.ones(4), np.ones(2)),
    (store_sum_in_row, np.zeros((2, 2)), np.ones(3), np.ones(2)),
    (store_sum_in_slice, np.zeros(2), np.ones(4), np.ones(2)),
    (store_in_prange, np.zeros((2, 2)), np.ones((2, 3)), np.ones((2, 2))),
], ids=lambda x: getattr(x, "__name__", ""))
@pytest.mark.parametrize("k", [0, 7])
def test_a_stored_value_raises_its_own_error_before_the_target_s(f, a, b, c, k):
    # Python evaluates the value (b + c: NumPy's broadcast ValueError) before the target (a[k]: IndexError)
    want = state_after(f, a.copy(), b, c, k)
    assert state_after(lk.jit(f), a.copy(), b, c, k) == want


def store_nan_in_view(a, i):
    a[i, None, 1] = np.nan


def store_nan_in_rows(a, i):
    a[i:i + 2] = np.nan


def store_inf_in_view(a, i):
    a[i, None] = np.inf


@pytest.mark.parametrize("f", [store_nan_in_view, store_nan_in_rows, store_inf_in_view], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [np.uint8, np.int32])
@pytest.mark.parametrize("i", [1, 9, -9])
def test_a_view_store_raises_its_index_error_before_converting_the_value(f, dtype, i):
    # NumPy indexes first, then converts: a[9, None, 1] = nan is an IndexError, a[1, None, 1] = nan the ValueError
    # of converting NaN to an integer (fuzz seed 931628)
    want = state_after(f, np.zeros((4, 2), dtype), i)
    assert state_after(lk.jit(f), np.zeros((4, 2), dtype), i) == want


@pytest.mark.parametrize("idx, shape", [([], (3, 0)), ([], (2, 0, 0)), ([1, 2], (3, 0)), ([], (0, 3)), ([1], (3, 1)),
                                        ([1, 2], (1, 2)), ([], (3,)), ([0], (1, 1, 1)), ([0, 2], (0, 2))])
def test_an_index_array_store_takes_a_taller_value_as_numpy_reshapes_it(idx, shape):
    # NumPy reshapes the value to its last dimension: leading dimensions of 1, or any leading dimensions of an
    # empty value whose last dimension is 0 (fuzz seed 931356); otherwise its ValueError
    idx, v = np.array(idx, dtype=np.int64), np.ones(shape)
    want = state_after(store_through_index_array, np.zeros(3), idx, v)
    assert state_after(lk.jit(store_through_index_array), np.zeros(3), idx, v) == want
