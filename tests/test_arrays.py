"""Arrays against NumPy: indexing and slicing (views), element and slice assignment, attributes, constructors,
ufunc-style math, broadcasting arithmetic and reductions. Arguments include non-contiguous views (a[::2], a.T,
a[::-1]), empty and size-1 arrays, NaN, int32 and float32; result dtypes must equal NumPy's."""
import numpy as np
import pytest

from test_language import check, clone, jitted, same

# ---------------------------------------------------------------- inputs

V = np.arange(12.0) * 1.5 - 4.0
M = np.arange(24.0).reshape(4, 6) - 7.0
T3 = np.arange(60.0).reshape(3, 4, 5)
I32 = (np.arange(12) - 5).astype(np.int32)
F32 = (np.arange(12) * 0.5 - 2).astype(np.float32)

VEC = {"c": V, "step2": V[::2], "rev": V[::-1], "step-3": V[-2::-3], "one": V[4:5], "int32": I32,
       "int32_rev": I32[::-1], "float32": F32, "int64": np.arange(-3, 9), "uint8": np.arange(10, dtype=np.uint8)}
MAT = {"c": M, "T": M.T, "steps": M[::2, ::-2], "rev": M[::-1], "row": M[:1], "col": M[:, 2:3],
       "int32": I32.reshape(3, 4), "int32_T": I32.reshape(3, 4).T, "float32": F32.reshape(4, 3)}


def check_view(f, a, *rest):
    """f returns a view of its argument a: NumPy's values, and memory shared with (the lorikeet copy of) a, at the
    same place and with the same strides as NumPy's view."""
    ra, la = clone(a), clone(a)
    exp = f(ra, *rest)
    got = jitted(f)(la, *rest)
    same(got, exp)
    if exp.size:
        assert np.shares_memory(got, la), "the result is not a view of the argument"
        off = got.__array_interface__["data"][0] - la.__array_interface__["data"][0]
        exp_off = exp.__array_interface__["data"][0] - ra.__array_interface__["data"][0]
        assert off == exp_off, "the view starts at another element than NumPy's"
        assert got.strides == exp.strides or exp.size == 1
    return got


# ---------------------------------------------------------------- integer indexing

def get1(a, i):
    return a[i]


def get2(a, i, j):
    return a[i, j]


def get2_chained(a, i, j):
    return a[i][j]


def get3(a, i, j, k):
    return a[i, j, k]


def get_row(a, i):
    return a[i]


def get_last_first(a):
    return a[-1] - a[0] + a[len(a) // 2]


@pytest.mark.parametrize("name", list(VEC))
def test_int_index_1d_incl_negative(name):
    a = VEC[name]
    n = len(a)
    for i in sorted({0, 1 % n, n - 1, -1, -n, -(n // 2) - 1, n // 2}):
        check(get1, a, i)
    check(get_last_first, a)


@pytest.mark.parametrize("name", list(MAT))
def test_int_index_2d_incl_negative(name):
    a = MAT[name]
    n, m = a.shape
    for i, j in [(0, 0), (n - 1, m - 1), (-1, -1), (-n, -m), (n // 2, -m), (-1, 0)]:
        check(get2, a, i, j)
        check(get2_chained, a, i, j)


@pytest.mark.parametrize("i,j,k", [(0, 0, 0), (2, 3, 4), (-1, -1, -1), (-3, 1, -5), (1, -4, 2)])
@pytest.mark.parametrize("a", [T3, T3.transpose(2, 0, 1), T3[::-1, ::2, ::-2]], ids=["c", "transposed", "steps"])
def test_int_index_3d(a, i, j, k):
    check(get3, a, i % a.shape[0], j % a.shape[1], k % a.shape[2])
    check(get3, a, i % a.shape[0] - a.shape[0], j % a.shape[1] - a.shape[1], k % a.shape[2] - a.shape[2])


@pytest.mark.parametrize("name", list(MAT))
@pytest.mark.parametrize("i", [0, -1, 1])
def test_int_index_of_2d_gives_row_view(name, i):
    a = MAT[name]
    if i >= len(a):
        i = -len(a)
    check_view(get_row, a, i)


# ---------------------------------------------------------------- slices and tuples of them: views

def s_from1(a):
    return a[1:]


def s_to_neg1(a):
    return a[:-1]


def s_step2(a):
    return a[::2]


def s_reverse(a):
    return a[::-1]


def s_last3(a):
    return a[-3:]


def s_neg_step_range(a):
    return a[5:1:-2]


def s_neg_step_neg_bounds(a):
    return a[-1:-100:-3]


def s_past_end(a):
    return a[100:]


def s_clamped(a):
    return a[-100:100]


def s_empty(a):
    return a[3:1]


def s_step3(a):
    return a[1:8:3]


def s_runtime(a, i, j, k):
    return a[i:j:k]


def s_runtime_start(a, i):
    return a[i:]


def s_slice_of_slice(a):
    return a[1:][::-2][1:]


SLICES_1D = [s_from1, s_to_neg1, s_step2, s_reverse, s_last3, s_neg_step_range, s_neg_step_neg_bounds, s_past_end,
             s_clamped, s_empty, s_step3, s_slice_of_slice]


@pytest.mark.parametrize("f", SLICES_1D, ids=lambda f: f.__name__)
@pytest.mark.parametrize("name", ["c", "step2", "rev", "one", "int32_rev", "float32"])
def test_constant_slices_1d_are_views(f, name):
    check_view(f, VEC[name])


@pytest.mark.parametrize("ijk", [(0, 12, 1), (2, 9, 2), (9, 2, -2), (-1, -13, -1), (-5, 100, 3), (11, 0, -4),
                                 (3, 3, 1), (5, 2, 1), (-100, -50, 1), (0, 12, 20), (11, -13, -5)])
@pytest.mark.parametrize("name", ["c", "rev", "step2"])
def test_runtime_slices_1d_are_views(name, ijk):
    check_view(s_runtime, VEC[name], *ijk)


@pytest.mark.parametrize("i", [-20, -3, 0, 4, 20])
def test_runtime_slice_start(i):
    check_view(s_runtime_start, V, i)


def t_column(a):
    return a[:, 1]


def t_row(a):
    return a[1, :]


def t_both_steps(a):
    return a[::-1, ::2]


def t_block(a):
    return a[1:3, -2:]


def t_flip_cols(a):
    return a[:, ::-1]


def t_last_row(a):
    return a[-1]


def t_row_slice(a):
    return a[-1, 1::2]


def t_empty_rows(a):
    return a[2:2, :]


def t_runtime(a, i, j, k):
    return a[i, j::k]


def t_3d_mixed(a):
    return a[-1, ::-2, 1:4]


def t_3d_col(a):
    return a[:, 2, ::-1]


SLICES_2D = [t_column, t_row, t_both_steps, t_block, t_flip_cols, t_last_row, t_row_slice, t_empty_rows]


@pytest.mark.parametrize("f", SLICES_2D, ids=lambda f: f.__name__)
@pytest.mark.parametrize("name", ["c", "T", "steps", "rev", "int32_T", "float32"])
def test_tuple_of_slices_2d_are_views(f, name):
    check_view(f, MAT[name])


@pytest.mark.parametrize("ijk", [(0, 0, 1), (-1, -1, -1), (1, 5, -2), (-2, -100, 3)])
@pytest.mark.parametrize("name", ["c", "T"])
def test_runtime_int_and_slice_tuple(name, ijk):
    check_view(t_runtime, MAT[name], *ijk)


@pytest.mark.parametrize("f", [t_3d_mixed, t_3d_col], ids=lambda f: f.__name__)
@pytest.mark.parametrize("a", [T3, T3.transpose(1, 2, 0), T3[:, ::-1]], ids=["c", "transposed", "rev"])
def test_tuple_index_3d(f, a):
    check_view(f, a)


def e_last(a):
    return a[..., 0]


def e_new_axis(a):
    return a[..., None]


def e_first(a):
    return a[1, ...]


def e_whole(a):
    return a[...]


def e_between(a):
    return a[-1, ..., ::2]


def e_none_after(a):
    return a[..., None, 1:]


@pytest.mark.parametrize("f", [e_last, e_new_axis, e_first, e_whole, e_between, e_none_after],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("a", [T3, T3.transpose(1, 2, 0), M.T], ids=["3d", "3d_transposed", "2d_T"])
def test_ellipsis_stands_for_the_axes_the_other_items_leave(f, a):
    check_view(f, a)


@pytest.mark.parametrize("f", [e_new_axis, e_whole, e_none_after], ids=lambda f: f.__name__)
def test_ellipsis_of_a_vector(f):
    check_view(f, V[::2])


def test_ellipsis_then_an_element():
    # NumPy gives a 0-d array, lorikeet its element, as for every 0-d result (USERGUIDE, Differences/Results)
    got, want = jitted(e_last)(V[::-1]), e_last(V[::-1])
    assert want.shape == () and isinstance(got, np.float64) and got == want[()]


def e_store(a, v):
    a[..., 1] = v
    a[...] += 1.0
    return a


def test_ellipsis_in_stores():
    for a in (T3, M.T, V):
        ra, la = clone(a), clone(a)
        same(jitted(e_store)(la, 2.5), e_store(ra, 2.5))
        same(la, ra)


def e_element_store(a, v):
    a[-1, ...] = v  # a 0-d view: a value of one element broadcasts into it (a plain a[-1] = v raises)
    return a


def test_ellipsis_element_takes_a_one_element_array():
    for v in (np.array([5.0]), np.array([[2.5]])):
        ra, la = clone(V), clone(V)
        same(jitted(e_element_store)(la, v), e_element_store(ra, v))
    with pytest.raises(ValueError):
        e_element_store(clone(V), np.array([1.0, 2.0]))
    with pytest.raises(ValueError):
        jitted(e_element_store)(clone(V), np.array([1.0, 2.0]))


def e_two(a):
    return a[..., 0, ...]


def e_value(a):
    return ...


def test_ellipsis_errors_name_the_line():
    import lorikeet as lk
    with pytest.raises(IndexError):
        e_two(T3)
    with pytest.raises(lk.CompileError, match=r"single ellipsis(.|\n)*line"):
        jitted(e_two)(T3)
    with pytest.raises(lk.CompileError, match="Ellipsis"):
        jitted(e_value)(T3)


def view_then_index(a):
    b = a[::-1, 1:]
    return b[0, 0] + b[-1, -1] + b.T[1, 2]


@pytest.mark.parametrize("name", ["c", "T", "steps"])
def test_index_into_local_view(name):
    check(view_then_index, MAT[name])


# ---------------------------------------------------------------- element and slice assignment

def set1(a, i, v):
    a[i] = v


def set2(a, i, j, v):
    a[i, j] = v


def aug1(a, i, v):
    a[i] += v
    a[i] *= 2


def aug2(a, i, j):
    a[i, j] -= 1
    a[-i - 1, j] //= 2


@pytest.mark.parametrize("name", ["c", "step2", "rev", "one", "int32", "float32", "uint8"])
@pytest.mark.parametrize("i", [0, -1, 2])
def test_element_assignment_1d(name, i):
    a = VEC[name]
    if abs(i) >= len(a) and i != -len(a):
        i = 0
    check(set1, a, i, 7)
    check(set1, a, i, 2.75)  # into an int array NumPy truncates
    check(aug1, a, i, 3)


@pytest.mark.parametrize("name", list(MAT))
def test_element_assignment_2d(name):
    a = MAT[name]
    check(set2, a, -1, 0, 9.5)
    check(set2, a, 0, -1, -3)
    check(aug2, a, 0, -1)


def write_all_loop(a):
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            a[i, j] = i * 10 + j


@pytest.mark.parametrize("name", list(MAT))
def test_loop_writes_through_strided_argument(name):
    check(write_all_loop, MAT[name])


def ss_scalar(a):
    a[1:4] = 0


def ss_step(a, v):
    a[::2] = v


def ss_reverse_from(a, b):
    a[::-1] = b


def ss_expression(a, b):
    a[1:-1] = b[2:] - b[:-2]


def ss_overlap(a):
    a[1:] = a[:-1]


def ss_overlap_reverse(a):
    a[:] = a[::-1]


def ss_all(a, v):
    a[:] = v


@pytest.mark.parametrize("name", ["c", "step2", "rev", "int32", "float32"])
def test_slice_assignment_1d(name):
    a = VEC[name]
    b = np.arange(len(a)) * 0.5 + 1
    check(ss_scalar, a)
    check(ss_step, a, -2.5)
    check(ss_reverse_from, a, b)
    check(ss_reverse_from, a, b[::-1].copy())
    check(ss_expression, a, b)
    check(ss_all, a, 4)


@pytest.mark.parametrize("name", ["c", "rev", "step2"])
def test_slice_assignment_with_overlap_follows_numpy(name):
    check(ss_overlap, VEC[name])
    check(ss_overlap_reverse, VEC[name])


def bc_row(a, r):
    a[:] = r


def bc_col(a, c):
    a[:, 0] = c


def bc_block(a):
    a[1:, ::2] = 7.5


def bc_col_vector(a, c):
    a[::-1, :] = c


def bc_row_into_slice(a, r):
    a[1:3] = r[::-1]


@pytest.mark.parametrize("name", ["c", "T", "steps", "rev", "int32", "float32"])
def test_slice_assignment_with_broadcasting_2d(name):
    a = MAT[name]
    n, m = a.shape
    r = np.arange(m) * 1.5
    check(bc_row, a, r)
    check(bc_row, a, r[::-1])
    check(bc_col, a, np.arange(n) - 2.0)
    check(bc_block, a)
    check(bc_col_vector, a, (np.arange(n) * 3.0).reshape(n, 1))
    if n >= 3:
        check(bc_row_into_slice, a, r)


# ---------------------------------------------------------------- attributes

def attrs(a):
    return a.shape, a.ndim, a.size, len(a.shape)


def attr_T(a):
    return a.T


def attr_T_shape(a):
    return a.T.shape, a.T.T.shape


def attr_dtype(a):
    return a.dtype


def attr_dtype_use(a):
    return np.zeros(a.shape, a.dtype)


def attr_dtype_compare(a):
    return a.dtype == np.float64, a.dtype == np.int32


ATTR_ARGS = {"v_c": V, "v_rev": V[::-1], "v_int32": I32, "v_float32": F32, "v_uint8": VEC["uint8"], "m_c": M,
             "m_T": M.T, "m_steps": M[::2, ::-2], "m_int32_T": MAT["int32_T"], "m_float32": MAT["float32"],
             "3d": T3, "3d_T": T3.T, "empty": V[:0], "empty2d": np.zeros((0, 4)), "size1_axes": np.zeros((1, 1, 3))}


@pytest.mark.parametrize("name", list(ATTR_ARGS))
def test_attributes(name):
    a = ATTR_ARGS[name]
    check(attrs, a)
    check(attr_T_shape, a)
    check(attr_dtype, a)
    check(attr_dtype_use, a)
    check_view(attr_T, a)


@pytest.mark.parametrize("name", ["v_c", "m_int32_T", "v_float32"])
def test_dtype_comparison(name):
    check(attr_dtype_compare, ATTR_ARGS[name])


def zero_d(a):
    return a.sum() + a.ndim, a.shape, a * 2.0


def test_zero_dimensional_array_argument():
    # "NumPy arrays of any ndim": ndim 0 included
    check(zero_d, np.array(3.5))


# ---------------------------------------------------------------- constructors

def c_zeros(n):
    return np.zeros(n)


def c_zeros2(n, m):
    return np.zeros((n, m))


def c_zeros_dtype(n):
    return np.zeros(n, np.int32), np.zeros((n, 2), dtype=np.float32), np.zeros(n, dtype=np.uint8)


def c_ones(n):
    return np.ones(n), np.ones((2, n), dtype=np.int64), np.ones(n, np.float32), np.ones(n, dtype=np.bool_)


def c_full(n):
    return np.full(n, 2.5), np.full((2, n), 7), np.full(n, 3, dtype=np.uint8), np.full(n, True)


def c_full_runtime_value(n, v):
    return np.full((n, 3), v)


def c_empty(n):
    return np.empty(n), np.empty((n, 3), np.int32)


def c_empty_shape(n):
    e = np.empty((n, 3), np.int32)
    return e.shape, e.dtype


def c_like(a):
    return np.zeros_like(a), np.ones_like(a), np.full_like(a, 3), np.zeros_like(a, dtype=np.float32)


def c_empty_like(a):
    e = np.empty_like(a)
    return e.shape, e.dtype


def c_shape_from_arg(a):
    return np.zeros(a.shape), np.ones(a.shape[0])


def c_filled_loop(n):
    out = np.empty(n)
    for i in range(n):
        out[i] = i * 0.5
    return out


@pytest.mark.parametrize("n", [0, 1, 5])
def test_constructors(n):
    check(c_zeros, n)
    check(c_zeros2, n, 3)
    check(c_zeros2, 2, n)
    check(c_zeros_dtype, n)
    check(c_ones, n)
    check(c_full, n)
    check(c_full_runtime_value, n, 1.25)
    check(c_full_runtime_value, n, -4)
    check(c_empty_shape, n)
    check(c_filled_loop, n)
    for got, exp in zip(jitted(c_empty)(n), c_empty(n)):
        assert got.shape == exp.shape and got.dtype == exp.dtype


@pytest.mark.parametrize("name", list(ATTR_ARGS))
def test_like_constructors(name):
    check(c_like, ATTR_ARGS[name])
    check(c_empty_like, ATTR_ARGS[name])
    check(c_shape_from_arg, ATTR_ARGS[name])


def ar1(n):
    return np.arange(n)


def ar2(a, b):
    return np.arange(a, b)


def ar3(a, b, s):
    return np.arange(a, b, s)


def ar_dtype(n):
    return np.arange(n, dtype=np.int32), np.arange(n, dtype=np.float64), np.arange(1, n, 2, dtype=np.float32)


def ar_positional_dtype(n):
    return np.arange(1, n, 2, np.float32)


@pytest.mark.parametrize("n", [0, 1, 7, -2])
def test_arange_one_arg(n):
    check(ar1, n)
    check(ar_dtype, n)


@pytest.mark.parametrize("n", [0, 7])
def test_arange_positional_dtype(n):
    check(ar_positional_dtype, n)


@pytest.mark.parametrize("a,b", [(0, 5), (3, 9), (-4, 2), (5, 5), (8, 3)])
def test_arange_two_args(a, b):
    check(ar2, a, b)


@pytest.mark.parametrize("a,b,s", [(0, 10, 3), (10, 0, -1), (10, -10, -7), (0, 10, -1), (0.0, 1.0, 0.25),
                                   (1.0, -1.0, -0.5), (0, 1, 0.1), (2, 3.5, 1)])
def test_arange_three_args(a, b, s):
    check(ar3, a, b, s)


def ar_float(x):
    return np.arange(x)


@pytest.mark.parametrize("x", [0.0, 0.5, 3.0, 4.5])
def test_arange_float_stop(x):
    check(ar_float, x)


# ---------------------------------------------------------------- np.* math on scalars and arrays

def np_sqrt(x):
    return np.sqrt(x)


def np_exp(x):
    return np.exp(x)


def np_log(x):
    return np.log(x)


def np_sin(x):
    return np.sin(x)


def np_cos(x):
    return np.cos(x)


def np_tanh(x):
    return np.tanh(x)


def np_abs(x):
    return np.abs(x)


def np_floor(x):
    return np.floor(x)


def np_ceil(x):
    return np.ceil(x)


def np_tan(x):
    return np.tan(x)


def np_log10(x):
    return np.log10(x)


def np_log2(x):
    return np.log2(x)


def np_log1p(x):
    return np.log1p(x)


def np_expm1(x):
    return np.expm1(x)


def np_arctan(x):
    return np.arctan(x)


def np_sinh(x):
    return np.sinh(x)


def np_cosh(x):
    return np.cosh(x)


def np_absolute(x):
    return np.absolute(x)


def np_negative(x):
    return np.negative(x)


def np_square(x):
    return np.square(x)


def np_trunc(x):
    return np.trunc(x)


def np_sign(x):
    return np.sign(x)


def np_arcsin(x):
    return np.arcsin(x)


def np_arccos(x):
    return np.arccos(x)


def np_exp2(x):
    return np.exp2(x)


NAMED_UFUNCS = [np_sqrt, np_exp, np_log, np_sin, np_cos, np_tanh, np_abs, np_floor]
MORE_UFUNCS = [np_ceil, np_tan, np_log10, np_log2, np_log1p, np_expm1, np_arctan, np_sinh, np_cosh, np_absolute,
               np_negative, np_square, np_trunc, np_sign, np_arcsin, np_arccos, np_exp2]

UFUNC_ARRAYS = {
    "f64": np.array([0.0, 0.25, 1.0, 2.5, 10.0, np.nan, np.inf, 0.5]),
    "f64_neg": np.array([-0.0, -0.25, -1.0, -2.5, -10.0, -np.inf, 3.0]),
    "f64_step": (np.arange(20.0) * 0.3)[::3],
    "f64_rev": (np.arange(10.0) * 0.1)[::-1],
    "f64_2d_T": (np.arange(12.0).reshape(3, 4) * 0.25).T,
    "f32": np.array([0.0, 0.25, 1.0, 2.5, 10.0, np.nan, 0.75], dtype=np.float32),
    "i32": np.array([0, 1, 2, 3, 9, -4, 100], dtype=np.int32),
    "i64": np.array([0, 1, 5, -7, 42]),
    "empty": np.zeros(0),
    "size1": np.full((1, 1), 0.5),
}
UFUNC_SCALARS = [0.5, 2.0, -1.5, 0.0, np.nan, np.inf, 3, -2, 0]


@pytest.mark.parametrize("arg", list(UFUNC_ARRAYS))
@pytest.mark.parametrize("f", NAMED_UFUNCS, ids=lambda f: f.__name__)
def test_named_ufuncs_on_arrays(f, arg):
    check(f, UFUNC_ARRAYS[arg], rel=1e-13)


@pytest.mark.parametrize("x", UFUNC_SCALARS)
@pytest.mark.parametrize("f", NAMED_UFUNCS, ids=lambda f: f.__name__)
def test_named_ufuncs_on_scalars(f, x):
    check(f, x, rel=1e-13)


@pytest.mark.parametrize("arg", ["f64_neg", "f64_step", "f32", "i32"])
@pytest.mark.parametrize("f", MORE_UFUNCS, ids=lambda f: f.__name__)
def test_more_ufuncs_on_arrays(f, arg):
    check(f, UFUNC_ARRAYS[arg], rel=1e-13)


@pytest.mark.parametrize("x", [0.5, -1.5, 3])
@pytest.mark.parametrize("f", MORE_UFUNCS, ids=lambda f: f.__name__)
def test_more_ufuncs_on_scalars(f, x):
    check(f, x, rel=1e-13)


def np_maximum(a, b):
    return np.maximum(a, b)


def np_minimum(a, b):
    return np.minimum(a, b)


def np_arctan2(a, b):
    return np.arctan2(a, b)


def np_hypot(a, b):
    return np.hypot(a, b)


def np_power(a, b):
    return np.power(a, b)


@pytest.mark.parametrize("f", [np_maximum, np_minimum, np_arctan2, np_hypot, np_power], ids=lambda f: f.__name__)
def test_binary_ufuncs(f):
    a = np.array([1.0, -2.0, np.nan, 3.0, 0.5, 2.0])
    b = np.array([0.5, -3.0, 1.0, np.nan, 4.0, 2.0])
    check(f, a, b, rel=1e-13)
    check(f, a[::-1], 2.0, rel=1e-13)
    check(f, M, V[:6], rel=1e-13)
    check(f, 1.5, 2.5, rel=1e-13)


def ufunc_composite(a, b):
    return np.sqrt(np.abs(a)) * np.exp(-b * b) + np.log(1.0 + np.abs(b)) - np.floor(a) * np.tanh(b)


@pytest.mark.parametrize("sh", [((7,), (7,)), ((3, 4), (4,)), ((3, 1), (1, 4)), ((0,), (0,))])
def test_ufunc_composite_with_broadcasting(sh):
    a = np.linspace(-3, 3, int(np.prod(sh[0]))).reshape(sh[0])
    b = np.linspace(-1, 2, int(np.prod(sh[1]))).reshape(sh[1])
    check(ufunc_composite, a, b, rel=1e-13)


# ---------------------------------------------------------------- whole-array arithmetic with broadcasting

def ar_add(a, b):
    return a + b


def ar_sub(a, b):
    return a - b


def ar_mul(a, b):
    return a * b


def ar_div(a, b):
    return a / b


def ar_floordiv(a, b):
    return a // b


def ar_mod(a, b):
    return a % b


def ar_pow(a, b):
    return a ** b


def ar_lt(a, b):
    return a < b


def ar_eq(a, b):
    return a == b


def ar_ge(a, b):
    return a >= b


def ar_expr(a, b):
    return a * 2.0 + b - a / (b * b + 10.0)


def ar_unary(a):
    return -a, +a, abs(a)


ARITH = [ar_add, ar_sub, ar_mul, ar_div, ar_floordiv, ar_mod, ar_lt, ar_eq, ar_ge, ar_expr]


def shaped(shape, dtype=np.float64, start=-5.5):
    n = int(np.prod(shape))
    return (np.arange(n) * 0.75 + start).astype(dtype).reshape(shape)


BROADCAST = {
    "same": (shaped((6,)), shaped((6,), start=1.25)),
    "row": (shaped((3, 4)), shaped((4,), start=0.5)),
    "outer": (shaped((3, 1)), shaped((1, 4), start=0.25)),
    "col": (shaped((3, 4)), shaped((3, 1), start=2.0)),
    "size1": (shaped((1,)), shaped((5,))),
    "3d": (shaped((2, 3, 4)), shaped((3, 1), start=1.0)),
    "empty": (shaped((0,)), shaped((0,))),
    "empty_bc": (shaped((0, 3)), shaped((3,))),
    "scalar": (shaped((5,)), 2.5),
    "scalar_left": (-1.5, shaped((2, 3))),
    "T": (shaped((4, 3)).T, shaped((3, 4), start=3.0)),
    "steps": (shaped((10,))[::2], shaped((15,))[::-3]),
    "T_vs_row": (shaped((4, 3)).T, shaped((4,))[::-1]),
}


@pytest.mark.parametrize("case", list(BROADCAST))
def test_array_addition_with_broadcasting(case):
    check(ar_add, *BROADCAST[case])
    check(ar_expr, *BROADCAST[case])


@pytest.mark.parametrize("case", ["same", "row", "outer", "3d", "empty_bc", "scalar", "scalar_left", "T", "steps"])
@pytest.mark.parametrize("f", [f for f in ARITH if f not in (ar_add, ar_expr)], ids=lambda f: f.__name__)
def test_array_arithmetic_with_broadcasting(f, case):
    check(f, *BROADCAST[case])


@pytest.mark.parametrize("case", ["same", "row", "T", "steps"])
def test_array_power(case):
    a, b = BROADCAST[case]
    check(ar_pow, np.abs(a), b)
    check(ar_pow, a, 2)
    check(ar_pow, a, 3.0)


INT_BROADCAST = {
    "i64": (np.array([7, -7, 7, -7, 0, 13]), np.array([3, 3, -3, -3, 5, 4])),
    "i32": (np.array([7, -7, 7, -7, 0, 13], np.int32), np.array([3, 3, -3, -3, 5, 4], np.int32)),
    "i32_scalar": (np.array([7, -7, 100, -100], np.int32), 3),
    "i64_row": (np.arange(-6, 6).reshape(3, 4), np.array([1, -2, 3, -4])),
    "i32_T": (np.arange(-6, 6, dtype=np.int32).reshape(4, 3).T, np.array([5, -5, 2, 7], np.int32)),
    "u8": (np.array([0, 1, 200, 255], np.uint8), np.array([3, 7, 9, 2], np.uint8)),
}


@pytest.mark.parametrize("case", list(INT_BROADCAST))
@pytest.mark.parametrize("f", [ar_add, ar_sub, ar_mul, ar_div, ar_floordiv, ar_mod, ar_lt, ar_pow],
                         ids=lambda f: f.__name__)
def test_int_array_arithmetic(f, case):
    a, b = INT_BROADCAST[case]
    if f is ar_pow:
        b = np.abs(b) % 4
    check(f, a, b)


@pytest.mark.parametrize("arg", list(UFUNC_ARRAYS) + ["u8"])
def test_unary_array_ops(arg):
    a = UFUNC_ARRAYS.get(arg, np.array([0, 3, 255], np.uint8))
    check(ar_unary, a)


def ar_with_scalar_args(a, x, k):
    return (a + x) * k - x / k


@pytest.mark.parametrize("name", ["c", "step2", "rev", "one", "float32", "int32"])
def test_array_with_scalar_arguments(name):
    check(ar_with_scalar_args, VEC[name], 1.5, 3)


def ar_bool_ops(a, b):
    return (a > 0) & (b < 1), (a > 0) | (b < 1), ~(a > 0)


@pytest.mark.parametrize("case", ["same", "row", "T"])
def test_bool_array_operators(case):
    check(ar_bool_ops, *BROADCAST[case])


# ---------------------------------------------------------------- reductions

def sum_plain(a):
    return a.sum()


def np_sum_plain(a):
    return np.sum(a)


def prod_plain(a):
    return a.prod()


def np_prod_plain(a):
    return np.prod(a)


def min_plain(a):
    return a.min()


def np_min_plain(a):
    return np.min(a)


def max_plain(a):
    return a.max()


def np_max_plain(a):
    return np.max(a)


def mean_plain(a):
    return a.mean()


def np_mean_plain(a):
    return np.mean(a)


def all_plain(a):
    return a.all()


def np_all_plain(a):
    return np.all(a)


def any_plain(a):
    return a.any()


def np_any_plain(a):
    return np.any(a)


PLAIN_REDUCTIONS = [sum_plain, np_sum_plain, prod_plain, np_prod_plain, min_plain, np_min_plain, max_plain,
                    np_max_plain, mean_plain, np_mean_plain, all_plain, np_all_plain, any_plain, np_any_plain]


def axis_reductions(axis):
    """The 14 reductions with a keyword axis (a closure constant, resolved at compile time)."""

    def sum_m(a):
        return a.sum(axis=axis)

    def sum_np(a):
        return np.sum(a, axis=axis)

    def prod_m(a):
        return a.prod(axis=axis)

    def prod_np(a):
        return np.prod(a, axis=axis)

    def min_m(a):
        return a.min(axis=axis)

    def min_np(a):
        return np.min(a, axis=axis)

    def max_m(a):
        return a.max(axis=axis)

    def max_np(a):
        return np.max(a, axis=axis)

    def mean_m(a):
        return a.mean(axis=axis)

    def mean_np(a):
        return np.mean(a, axis=axis)

    def all_m(a):
        return a.all(axis=axis)

    def all_np(a):
        return np.all(a, axis=axis)

    def any_m(a):
        return a.any(axis=axis)

    def any_np(a):
        return np.any(a, axis=axis)

    return [sum_m, sum_np, prod_m, prod_np, min_m, min_np, max_m, max_np, mean_m, mean_np, all_m, all_np, any_m,
            any_np]


AXIS_REDUCTIONS = {axis: axis_reductions(axis) for axis in (None, 0, 1, 2, -1)}

RED_1D = {
    "f64": np.array([1.5, -2.0, 3.25, 0.5, 4.0, -1.0]), "f64_step": (np.arange(13.0) - 4)[::3],
    "f64_rev": (np.arange(9.0) * 0.5 + 0.5)[::-1], "f64_nan": np.array([1.0, np.nan, -3.0]),
    "f64_zero": np.array([2.0, 0.0, -1.0]), "one": np.array([-7.5]), "empty": np.zeros(0),
    "i32": np.array([3, -1, 4, 1, -5, 9], np.int32), "i64": np.arange(1, 11), "u8": np.array([3, 250, 7], np.uint8),
    "i8": np.array([100, 100, -3], np.int8), "f32": np.array([0.5, 1.5, -2.0, 8.0], np.float32),
    "bool": np.array([True, False, True]),
}
RED_ND = {
    "m": M, "m_T": M.T, "m_steps": M[::2, ::-2], "m_nan": np.where(M == 3.0, np.nan, M), "m_i32_T": MAT["int32_T"],
    "m_f32": MAT["float32"], "m_row": M[:1], "m_col": M[:, :1], "m_empty": np.zeros((0, 3)), "m_bool": M > 0,
    "t3_steps": T3[::-1, ::2, 1::2] - 30.0,
}


METHOD_PLAIN = PLAIN_REDUCTIONS[0::2]
NP_PLAIN = PLAIN_REDUCTIONS[1::2]
# the np.* forms are checked on fewer (but all kinds of) arrays: compile time is what makes this suite slow
NP_FORM_ARGS = ["m", "m_T", "m_i32_T", "m_bool", "t3_steps"]


@pytest.mark.parametrize("arg", list(RED_1D))
@pytest.mark.parametrize("f", METHOD_PLAIN, ids=lambda f: f.__name__)
def test_reductions_without_axis_1d(f, arg):
    check(f, RED_1D[arg])


@pytest.mark.parametrize("arg", list(RED_ND))
@pytest.mark.parametrize("f", METHOD_PLAIN, ids=lambda f: f.__name__)
def test_reductions_without_axis_nd(f, arg):
    check(f, RED_ND[arg])


@pytest.mark.parametrize("arg", ["f64", "f64_rev", "i32", "bool", "empty", "f32"])
@pytest.mark.parametrize("f", NP_PLAIN, ids=lambda f: f.__name__)
def test_np_reductions_without_axis_1d(f, arg):
    check(f, RED_1D[arg])


@pytest.mark.parametrize("arg", NP_FORM_ARGS)
@pytest.mark.parametrize("f", NP_PLAIN, ids=lambda f: f.__name__)
def test_np_reductions_without_axis_nd(f, arg):
    check(f, RED_ND[arg])


def reduction_id(i):
    return AXIS_REDUCTIONS[0][i].__name__


@pytest.mark.parametrize("axis", [0])
@pytest.mark.parametrize("arg", list(RED_1D))
@pytest.mark.parametrize("i", range(0, 14, 2), ids=reduction_id)
def test_reductions_with_axis_1d(i, arg, axis):
    check(AXIS_REDUCTIONS[axis][i], RED_1D[arg])


# every axis each array has, and -1 (axis=None: with the np.* forms below)
RED_ND_AXES = [(arg, axis) for arg in RED_ND for axis in (0, 1, 2, -1) if axis < RED_ND[arg].ndim]


@pytest.mark.parametrize("arg,axis", RED_ND_AXES, ids=[f"{arg}-{axis}" for arg, axis in RED_ND_AXES])
@pytest.mark.parametrize("i", range(0, 14, 2), ids=reduction_id)
def test_reductions_with_axis_nd(i, arg, axis):
    check(AXIS_REDUCTIONS[axis][i], RED_ND[arg])


@pytest.mark.parametrize("axis", [None, -1])
@pytest.mark.parametrize("arg", NP_FORM_ARGS)
@pytest.mark.parametrize("i", range(1, 14, 2), ids=reduction_id)
def test_np_reductions_with_axis_nd(i, arg, axis):
    check(AXIS_REDUCTIONS[axis][i], RED_ND[arg])


def positional_axis(a):
    return a.sum(0), np.sum(a, 1), a.max(1), np.min(a, 0), a.mean(0)


def reduce_expression(a, b):
    return (a * b).sum(axis=0), np.sum(a > 0), (a - a.mean()).sum(), np.max(np.abs(a - b), axis=1)


def reduce_then_broadcast(a):
    return a - a.mean(axis=0), (a.T / a.max(axis=1)).T


@pytest.mark.parametrize("name", ["c", "T", "steps", "int32_T", "float32"])
def test_positional_axis_and_reductions_of_expressions(name):
    a = MAT[name]
    check(positional_axis, a)
    check(reduce_expression, a, a[::-1] * 0.5)


@pytest.mark.parametrize("name", ["c", "T", "steps"])
def test_reduction_result_broadcast_back(name):
    check(reduce_then_broadcast, MAT[name] + 100.0)


def reduce_in_loop(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i].sum() * a[i, ::-1].max()
    return s


@pytest.mark.parametrize("name", ["c", "T", "steps", "int32"])
def test_reductions_of_rows_in_a_loop(name):
    check(reduce_in_loop, MAT[name])


def big_sum(a):
    return a.sum(), a.mean(), a.sum(axis=0)


def test_reductions_of_a_large_array_match_numpy_closely():
    rng = np.random.default_rng(1)
    a = rng.random((1000, 37))
    check(big_sum, a, rel=1e-10)
    check(big_sum, a.T, rel=1e-10)


# ---------------------------------------------------------------- indexed loop kernels
# Loops of element accesses: after one test before the loop, the accesses run without their checks (loop
# versioning), so the results must not change, whatever the layout, the dtype, or how far the loops reach.

import lorikeet as lk  # noqa: E402


def conv_3x3_loops(x, weights):
    h = x.shape[0] - 3
    w = x.shape[1] - 3
    out = np.empty((h, w))
    for i in range(h):
        for j in range(w):
            s = 0.0
            for di in range(3):
                for dj in range(3):
                    s += x[i + di, j + dj] * weights[di, dj]
            out[i, j] = s
    return out


def conv_numpy(x, weights):
    h, w = x.shape[0] - 3, x.shape[1] - 3
    out = np.zeros((h, w))
    for di in range(3):
        for dj in range(3):
            out += x[di:di + h, dj:dj + w] * weights[di, dj]
    return out


CONV_IN = np.sin(np.arange(13 * 11.0)).reshape(13, 11)
WEIGHTS = np.arange(1.0, 10.0).reshape(3, 3) / 7.0


@pytest.mark.parametrize("x", [CONV_IN, CONV_IN.T, CONV_IN[::2, ::-1], CONV_IN[:4, :5], CONV_IN[:3, :3], CONV_IN[:2],
                               (CONV_IN * 100).astype(np.int32), CONV_IN.astype(np.float32)],
                         ids=["c", "T", "steps", "4x5", "3x3", "2x11", "int32", "float32"])
def test_conv_loops_match_numpy(x):
    got = check(conv_3x3_loops, x, WEIGHTS)
    if got is not None:
        np.testing.assert_allclose(got, conv_numpy(x, WEIGHTS), rtol=1e-5 if x.dtype == np.float32 else 1e-12)


def matmult_loops(X, Y):
    m, d = X.shape
    n = Y.shape[1]
    Z = np.zeros((m, n), dtype=X.dtype)
    for i in range(m):
        for j in range(n):
            total = X[i, 0] * Y[0, j]
            for k in range(1, d):
                total += X[i, k] * Y[k, j]
            Z[i, j] = total
    return Z


def matmult_prange(X, Y):
    m, d = X.shape
    n = Y.shape[1]
    Z = np.zeros((m, n))
    for i in lk.prange(m):
        for j in range(n):
            total = 0.0
            for k in range(d):
                total += X[i, k] * Y[k, j]
            Z[i, j] = total
    return Z


MM_X = np.cos(np.arange(7 * 5.0)).reshape(7, 5)
MM_Y = np.sin(np.arange(5 * 6.0)).reshape(5, 6)


@pytest.mark.parametrize("X,Y", [(MM_X, MM_Y), (MM_Y.T, MM_X.T), (MM_X[::2], MM_Y[:, ::-1]),
                                 (MM_X.astype(np.float32), MM_Y.astype(np.float32)),
                                 (np.arange(12).reshape(3, 4), np.arange(20).reshape(4, 5)),
                                 (MM_X[:, :1], MM_Y[:1]), (MM_X[:0], MM_Y), (MM_X[:, :3], MM_Y)],
                         ids=["c", "T", "steps", "float32", "int64", "d=1", "m=0", "d_mismatch"])
def test_matmult_loops_match_numpy(X, Y):
    got = check(matmult_loops, X, Y)
    if got is not None and X.shape[1] == Y.shape[0]:
        np.testing.assert_allclose(got, np.dot(X, Y), rtol=1e-5 if X.dtype == np.float32 else 1e-12)
    check(matmult_prange, X, Y)


def test_matmult_with_empty_inner_dimension_raises_as_numpy_indexing_does():
    check(matmult_loops, MM_X[:, :0], MM_Y[:0])  # X[i, 0]: IndexError in CPython and here


def transpose_loops(a):
    out = np.empty((a.shape[1], a.shape[0]))
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            out[j, i] = a[i, j]
    return out


def reverse_loop(a):
    n = a.shape[0]
    out = np.empty(n)
    for i in range(n):
        out[n - 1 - i] = a[i] * 2.0
    return out


def smooth_wrapping(a):
    n = a.shape[0]
    out = np.empty(n)
    for i in range(n):
        out[i] = (a[i - 1] + a[i] + a[(i + 1) % n]) / 3.0  # a[-1] at i = 0, as in Python
    return out


@pytest.mark.parametrize("name", ["c", "T", "steps", "rev", "row", "col", "int32"])
def test_index_kernels_on_matrices(name):
    check(transpose_loops, MAT[name])


@pytest.mark.parametrize("name", ["c", "step2", "rev", "one", "int32", "float32"])
def test_index_kernels_on_vectors(name):
    check(reverse_loop, VEC[name])
    check(smooth_wrapping, VEC[name])
