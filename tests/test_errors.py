"""Behaviour on errors (issue 2): CompileError with file, line and source line; IndexError; ZeroDivisionError;
IEEE floats; TypeError for bad calls naming the parameter; lists accepted; inputs untouched; boundscheck=False;
and never a crash (the risky cases run in a child interpreter, so that a crash or a hang is reported, not suffered)."""
import inspect
import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import lorikeet as lk
from test_language import check, clone, same

HERE = os.path.basename(__file__)
PYSHIM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pyshim")


def assert_compile_error(f, snippets, *args):
    """Calling lk.jit(f)(*args) raises lk.CompileError (a TypeError) whose message names this file, and the line
    number and text of one of the snippets (the offending line; a list where more than one line is a fair answer)."""
    if isinstance(snippets, str):
        snippets = [snippets]
    lines, first = inspect.getsourcelines(f)
    wanted = []
    for snip in snippets:
        hits = [i for i, line in enumerate(lines) if snip in line]
        assert hits, f"test bug: {snip!r} not in the source of {f.__name__}"
        wanted.append((first + hits[0], lines[hits[0]].strip()))
    with pytest.raises(lk.CompileError) as e:
        lk.jit(f)(*args)
    assert isinstance(e.value, TypeError)
    msg = str(e.value)
    assert HERE in msg, f"file name missing from: {msg}"
    assert any(re.search(rf"(?<!\d){n}(?!\d)", msg) and text in msg for n, text in wanted), (
        f"none of the lines {wanted} (number and text) is in the message:\n{msg}")
    return msg


def test_compile_error_is_a_type_error():
    assert issubclass(lk.CompileError, TypeError)


# ---------------------------------------------------------------- unsupported syntax


def uses_dict(x):
    d = {"k": x}
    return x


def uses_try(x):
    y = x
    try:
        y = x + 1
    except ValueError:
        y = 0
    return y


def uses_with(x):
    with x:
        x = x + 1
    return x


def uses_fstring(x):
    s = f"{x} items"
    return x


COUNTER = 0


def uses_global(x):
    global COUNTER
    COUNTER = x
    return x


def uses_set_literal(x):
    s = {x, x + 1}
    return x


def uses_generator(x):
    t = (v for v in range(x))
    return t


def uses_yield(x):
    yield x


def uses_import(x):
    import os.path as osp
    return x


def uses_class(x):
    class Point:
        pass
    return x


def uses_del(x):
    y = x
    del y
    return x


def uses_star_kwargs(x, **rest):  # *args is supported (tests/test_values.py), **kwargs is not
    return x


def uses_string(x):
    s = "hello"
    return x


def uses_dict_comprehension(x):
    d = {v: v for v in range(x)}
    return x


SYNTAX_CASES = [
    (uses_dict, 'd = {"k": x}'),
    (uses_try, ["try:", "except ValueError:"]),
    (uses_with, "with x:"), (uses_fstring, 's = f"{x} items"'),
    (uses_global, "global COUNTER"),
]
MORE_SYNTAX_CASES = [
    (uses_set_literal, "s = {x, x + 1}"), (uses_generator, "t = (v for v in range(x))"), (uses_yield, "yield x"),
    (uses_import, "import os.path as osp"), (uses_class, ["class Point:", "pass"]), (uses_del, "del y"),
    (uses_star_kwargs, "def uses_star_kwargs(x, **rest):"), (uses_string, 's = "hello"'),
    (uses_dict_comprehension, "d = {v: v for v in range(x)}"),
]


@pytest.mark.parametrize("f,snippet", SYNTAX_CASES, ids=[f.__name__ for f, _ in SYNTAX_CASES])
def test_unsupported_syntax_is_a_compile_error_showing_the_line(f, snippet):
    assert_compile_error(f, snippet, 3)


@pytest.mark.parametrize("f,snippet", MORE_SYNTAX_CASES, ids=[f.__name__ for f, _ in MORE_SYNTAX_CASES])
def test_more_unsupported_syntax_is_a_compile_error_showing_the_line(f, snippet):
    assert_compile_error(f, snippet, 3)


def test_compile_error_leaves_the_dispatcher_usable():
    f = lk.jit(uses_dict)
    for _ in range(3):
        with pytest.raises(lk.CompileError):
            f(1)


# ---------------------------------------------------------------- unresolved names and type errors


def unresolved_name(x):
    y = x * 2
    return y + no_such_name_anywhere  # noqa: F821


def unresolved_numpy_attr(a):
    return np.no_such_function(a)


def unresolved_math_attr(x):
    return math.no_such_function(x)


def unresolved_array_attr(a):
    return a.no_such_attribute


def assigned_later_only(x):
    if x > 0:
        z = 1
    return z


GREETING = "hello"


def uses_string_global(x):
    return x + GREETING


NAME_CASES = [
    (unresolved_name, "return y + no_such_name_anywhere", 3),
    (unresolved_numpy_attr, "np.no_such_function(a)", np.ones(3)),
    (unresolved_math_attr, "math.no_such_function(x)", 2.0), (unresolved_array_attr, "a.no_such_attribute", np.ones(3)),
    (uses_string_global, "return x + GREETING", 1),
]


@pytest.mark.parametrize("f,snippet,arg", NAME_CASES, ids=[c[0].__name__ for c in NAME_CASES])
def test_unresolved_names_are_compile_errors(f, snippet, arg):
    assert_compile_error(f, snippet, arg)


def test_possibly_unbound_local_never_crashes():
    # CPython raises UnboundLocalError (a NameError) when x <= 0; lorikeet may refuse to compile it (CompileError)
    # or raise at run time; it must not return garbage or crash
    f = lk.jit(assigned_later_only)
    try:
        got = f(1)
    except lk.CompileError as e:
        assert HERE in str(e)
        return
    assert got == 1
    with pytest.raises((NameError, lk.CompileError)):
        f(-1)


def tuple_plus_array(a):
    t = (1, 2)
    return a + t


def branch_types_conflict(a, c):
    if c > 0:
        y = a
    else:
        y = 1.0
    return y


def branch_types_conflict_tuple(c):
    if c:
        y = (1, 2)
    else:
        y = 3
    return y


def index_a_float(x):
    return x[0]


def len_of_number(x):
    return len(x)


def helper_two(a, b):
    return a + b


def calls_helper_with_missing_arg(x):
    return helper_two(x)


def calls_helper_with_bad_keyword(x):
    return helper_two(x, c=2)


def array_with_too_many_indices(a):
    return a[0, 0]


TYPE_CASES = [
    (tuple_plus_array, "return a + t", (np.ones(2),)),
    (branch_types_conflict, ["y = a", "y = 1.0", "return y", "if c > 0:"], (np.ones(3), 1)),
    (branch_types_conflict_tuple, ["y = (1, 2)", "y = 3", "return y", "if c:"], (1,)),
    (index_a_float, "return x[0]", (1.5,)),
    (len_of_number, "return len(x)", (3,)),
    (calls_helper_with_missing_arg, "return helper_two(x)", (1,)),
    (calls_helper_with_bad_keyword, "return helper_two(x, c=2)", (1,)),
    (array_with_too_many_indices, "return a[0, 0]", (np.ones(3),)),
]


@pytest.mark.parametrize("f,snippet,args", TYPE_CASES, ids=[c[0].__name__ for c in TYPE_CASES])
def test_type_errors_are_compile_errors_showing_the_line(f, snippet, args):
    assert_compile_error(f, snippet, *args)


def calls_helper_with_bad_syntax(x):
    return uses_dict(x) + 1


def calls_helper_with_type_error(a):
    return tuple_plus_array(a) * 2.0


def test_compile_error_in_a_callee_shows_the_callees_line():
    # the offending line is in the helper, not at the call site
    lines, first = inspect.getsourcelines(uses_dict)
    with pytest.raises(lk.CompileError) as e:
        lk.jit(calls_helper_with_bad_syntax)(1)
    assert 'd = {"k": x}' in str(e.value) and str(first + 1) in str(e.value)
    with pytest.raises(lk.CompileError) as e:
        lk.jit(calls_helper_with_type_error)(np.ones(2))
    assert "return a + t" in str(e.value)


def calls_get1(a, i):
    return get1(a, i) * 2.0


def test_index_error_inside_a_callee():
    f = lk.jit(calls_get1)
    assert f(V, -1) == 8.0
    with pytest.raises(IndexError):
        f(V, 5)
    with pytest.raises(IndexError):
        f(V, -6)


def scaled_item(a, i):
    return a[i] * 2.0  # an IndexError here names this line, inlined or not


def calls_scaled_item(a, i):
    return scaled_item(a, i) + 1.0


def halves(n, k):
    q = n // k  # a ZeroDivisionError here names this line, inlined or not
    return q + 1


def calls_halves(n, k):
    return halves(n, k) * 2


def line_of(f, text):
    lines, first = inspect.getsourcelines(f)
    return first + next(i for i, line in enumerate(lines) if text in line)


@pytest.mark.parametrize("caller,callee,text,args,exc", [
    (calls_scaled_item, scaled_item, "return a[i] * 2.0", (np.arange(5.0), 5), IndexError),
    (calls_halves, halves, "q = n // k", (7, 0), ZeroDivisionError),
])
def test_error_inside_an_inlined_callee_names_the_callees_line(caller, callee, text, args, exc):
    f = lk.jit(caller)
    # the callee is inlined (ir/inline_calls.c): no code of its own, its nodes in the caller
    assert re.findall(r"^def (\S+)\(", f.inspect_types(*args), flags=re.M) == [caller.__name__ + ".1"]
    with pytest.raises(exc) as e:
        f(*args)
    msg = str(e.value)
    assert HERE in msg and f"line {line_of(callee, text)}" in msg and text in msg, msg


# ---------------------------------------------------------------- IndexError


def get1(a, i):
    return a[i]


def get2(a, i, j):
    return a[i, j]


def get2_chained(a, i, j):
    return a[i][j]


def set1(a, i):
    a[i] = 99.0


def set2(a, i, j):
    a[i, j] = 99.0


def aug1(a, i):
    a[i] += 1.0


def copy_by_other_length(a, b):
    out = np.zeros(len(b))
    for i in range(len(b)):
        out[i] = a[i]
    return out


def loop_one_too_far(a):
    s = 0.0
    for i in range(len(a) + 1):
        s += a[i]
    return s


def while_walks_off(a):
    i = 0
    s = 0.0
    while True:
        s += a[i]
        i += 1
    return s


V = np.arange(5.0)
A = np.arange(12.0).reshape(3, 4)


@pytest.mark.parametrize("i", [5, 6, -6, -7, 10 ** 9, -(10 ** 9), 2 ** 62])
@pytest.mark.parametrize("arr", [V, np.arange(10.0)[::2], np.arange(10.0)[::-2]], ids=["c", "step2", "rev2"])
def test_out_of_bounds_read_raises_index_error(arr, i):
    with pytest.raises(IndexError, match="out of bounds"):
        lk.jit(get1)(clone(arr), i)


@pytest.mark.parametrize("i", [5, -6, 100])
def test_out_of_bounds_write_raises_and_leaves_the_array_alone(i):
    for f in (set1, aug1):
        a = V.copy()
        with pytest.raises(IndexError):
            lk.jit(f)(a, i)
        same(a, V)


def test_index_error_for_empty_array():
    with pytest.raises(IndexError):
        lk.jit(get1)(np.zeros(0), 0)
    with pytest.raises(IndexError):
        lk.jit(get1)(np.zeros(0), -1)


LAYOUTS_2D = {"c": A, "T": A.T[:3], "steps": A[::-1, ::2].T}
# (layout, i, j) pairs out of bounds for that layout's shape
OUT_OF_BOUNDS_2D = [(name, i, j) for name, a in LAYOUTS_2D.items()
                    for i, j in [(3, 0), (0, 4), (-4, 0), (0, -5), (2, 100), (-100, -1)]
                    if not (-a.shape[0] <= i < a.shape[0] and -a.shape[1] <= j < a.shape[1])]


@pytest.mark.parametrize("layout,i,j", OUT_OF_BOUNDS_2D)
def test_out_of_bounds_2d_raises(layout, i, j):
    arr = LAYOUTS_2D[layout]
    n = arr.shape[0]
    for f in (get2, set2):
        a = clone(arr)
        with pytest.raises(IndexError):
            lk.jit(f)(a, i, j)
        same(a, arr)
    if not -n <= i < n:
        with pytest.raises(IndexError):
            lk.jit(get2_chained)(clone(arr), i, j)


def test_out_of_bounds_in_loops_raises():
    # range(len(b)) proves nothing about a: the check on a[i] must stay
    with pytest.raises(IndexError):
        lk.jit(copy_by_other_length)(np.ones(3), np.ones(5))
    same(lk.jit(copy_by_other_length)(np.arange(6.0), np.ones(5)), np.arange(5.0))
    with pytest.raises(IndexError):
        lk.jit(loop_one_too_far)(np.ones(7))
    with pytest.raises(IndexError):
        lk.jit(while_walks_off)(np.ones(4)[::-1])


def test_index_error_message_shows_the_line():
    with pytest.raises(IndexError) as e:
        lk.jit(loop_one_too_far)(np.ones(3))
    assert "s += a[i]" in str(e.value) and HERE in str(e.value)


def test_function_still_works_after_an_index_error():
    f = lk.jit(get1)
    for _ in range(3):
        with pytest.raises(IndexError):
            f(V, 5)
        assert f(V, -1) == 4.0


# ---------------------------------------------------------------- IndexError in loops run without their checks
# A loop whose accesses one test before it proves in range runs a copy without their checks (loop versioning:
# ir/bounds_plan.c, ir/version_loops.c). Whatever copy runs, an access out of range raises IndexError
# with NumPy's message at its own line, after the same writes as under CPython, and negative indices wrap.


def last_frame_line(excinfo):
    tb = excinfo.tb
    while tb.tb_next:
        tb = tb.tb_next
    return tb.tb_lineno


def same_as_cpython(f, *args, backend=None, compare_args=True):
    """lk.jit(f) (on the default backend unless one is named) does what CPython does on copies of args: the same
    result, or an IndexError with NumPy's message (the first line of lorikeet's) whose location is this file and the
    line CPython raised at; the arrays passed in end up alike (writes made before the error included) unless
    compare_args is False."""
    ref_args = [clone(a) for a in args]
    lk_args = [clone(a) for a in args]
    g = lk.jit(f, backend=backend)
    try:
        exp = f(*ref_args)
    except IndexError:
        with pytest.raises(IndexError) as ref:
            f(*[clone(a) for a in args])
        with pytest.raises(IndexError) as got:
            g(*lk_args)
        msg = str(got.value)
        line = last_frame_line(ref)
        text = open(__file__).read().splitlines()[line - 1].strip()
        assert msg.splitlines()[0] == str(ref.value), f"{msg!r} is not NumPy's {str(ref.value)!r}"
        assert HERE in msg and f"line {line}" in msg and text in msg, f"not at line {line} ({text}):\n{msg}"
    else:
        same(g(*lk_args), exp)
    if compare_args:
        for la, ra in zip(lk_args, ref_args):
            if isinstance(ra, np.ndarray):
                same(la, ra)


def shifted_sum(a, n):
    s = 0.0
    for i in range(n):
        s += a[i + 1]
    return s


def offset_product(a, k):
    s = 0.0
    for i in range(len(a)):
        s += a[i + k] * a[i]
    return s


def write_differences(out, a):
    for i in range(len(out)):
        out[i] = a[i + 1] - a[i]


def countdown(a, n):
    s = 0.0
    for i in range(n, -1, -1):
        s += a[i] * (i + 1)
    return s


def every_other(a, n):
    s = 0.0
    for i in range(0, n, 2):
        s += a[i] - a[i + 1]
    return s


V7 = np.arange(1.0, 8.0)


@pytest.mark.parametrize("f,args", [
    (shifted_sum, (V7, 6)),                # in range
    (shifted_sum, (V7, 7)),                # a[7]: out of range on the last iteration only
    (shifted_sum, (V7, 0)),                # no iteration
    (offset_product, (V7, 0)),
    (offset_product, (V7, 1)),             # last iteration
    (offset_product, (V7, 7)),             # first iteration
    (offset_product, (V7, -1)),            # a[-1] on the first iteration wraps, as in Python
    (offset_product, (V7, -7)),            # every index negative, every one wraps
    (offset_product, (V7, -8)),            # a[-8]: first iteration
    (write_differences, (np.zeros(6), V7)),
    (write_differences, (np.zeros(7), V7)),  # out[0..5] written, then a[7] raises
    (countdown, (V7, 6)),
    (countdown, (V7, 7)),                  # a[7] on the first iteration of a descending loop
    (every_other, (V7, 6)),
    (every_other, (V7, 7)),                # i = 6: a[7]
], ids=lambda v: v.__name__ if callable(v) else None)
def test_versioned_loop_raises_where_cpython_does(f, args):
    same_as_cpython(f, *args)


def rows_doubled(out, x, n):
    for i in range(n):
        for j in range(x.shape[1]):
            out[i, j] = x[i, j] * 2.0


def test_a_versioned_loop_whose_test_fails_raises_in_the_checked_copy():
    # the IR tests the bounds once and runs a copy without checks when they hold; here out has 4 rows and the
    # loop wants 5, so the test fails and the checked loop writes rows 0..3, then raises at out[4, 0]
    x = np.arange(15.0).reshape(5, 3)
    assert "if versioned" in lk.jit(rows_doubled).inspect_types(np.zeros((4, 3)), x, 5)
    same_as_cpython(rows_doubled, np.zeros((4, 3)), x, 5)
    same_as_cpython(rows_doubled, np.zeros((5, 3)), x, 5)  # the test holds
    same_as_cpython(rows_doubled, np.zeros((5, 3)), x, 6)  # x[5, 0] raises: the value is read first


def stencil(x):
    n = x.shape[0]
    out = np.zeros(n)
    for i in range(n):
        out[i] = x[i - 1] + 2.0 * x[i]  # x[-1] at i = 0
    return out


def stencil_from(x, lo):
    n = x.shape[0]
    out = np.zeros(n)
    for i in range(lo, n):
        out[i] = x[i - 1] - x[i]
    return out


def stencil_2d(x):
    h, w = x.shape
    out = np.zeros((h, w))
    for i in range(h):
        for j in range(w):
            out[i, j] = x[i - 1, j] + x[i, j - 1] - 2.0 * x[i, j]
    return out


def test_negative_offsets_below_zero_wrap_as_in_python():
    x = np.arange(1.0, 9.0) ** 2
    same_as_cpython(stencil, x)
    for lo in (0, 1, 3, -3, -8, -9):  # the test fails (lo <= 0) or holds (lo >= 1); -9: x[-10] raises
        same_as_cpython(stencil_from, x, lo)
    same_as_cpython(stencil_2d, np.arange(20.0).reshape(4, 5) ** 2)
    same_as_cpython(stencil_2d, (np.arange(20.0).reshape(4, 5) ** 2).T)


def lower_sum(a):
    s = 0.0
    for i in range(a.shape[0]):
        for j in range(i):
            s += a[i, j] * (j + 1)
    return s


def upper_sum(a):
    s = 0.0
    for i in range(a.shape[0]):
        for j in range(i + 1, a.shape[1]):
            s += a[i, j] * (i + 1)
    return s


def band_sum(a, w):
    s = 0.0
    for i in range(a.shape[0]):
        for j in range(i, i + w):
            s += a[i, j]
    return s


def test_triangular_loops():
    a = np.arange(30.0).reshape(5, 6) ** 1.5
    for m in (a, a[:, :5], a[:1, :1], a[:0], a.T):
        same_as_cpython(lower_sum, m)
        same_as_cpython(upper_sum, m)
    same_as_cpython(band_sum, a, 2)          # a has 6 columns: j <= 5 in range
    same_as_cpython(band_sum, a[:, :5], 1)
    same_as_cpython(band_sum, a[:, :5], 2)   # a[4, 5]: out of range on the last row only


def index_var_reassigned(a, b):
    s = 0.0
    for i in range(len(a)):
        s += b[0] + a[i]
        i = 2 * i
        s += 10.0 * a[i]
    return s


def inner_var_after_its_loop(a, m):
    s = 0.0
    j = 0
    for i in range(len(a)):
        for j in range(m):
            s += a[i] * j
        s += a[j]  # the inner variable's last value (or its old one when the inner loop ran zero times)
    return s


def array_reassigned(a, b):
    s = 0.0
    x = a
    for i in range(len(a)):
        s += x[i] * a[i]
        x = b
    return s


def test_index_var_reassigned_in_the_body():
    same_as_cpython(index_var_reassigned, np.arange(6.0), np.ones(2))  # i = 3: a[6]
    same_as_cpython(index_var_reassigned, np.arange(1.0), np.ones(2))


def test_inner_loop_var_read_after_its_loop():
    for m in (0, 1, 6, 7):  # 7: a[6] after the inner loop
        same_as_cpython(inner_var_after_its_loop, np.arange(6.0), m)


def test_array_reassigned_in_the_body():
    same_as_cpython(array_reassigned, np.arange(5.0), np.arange(5.0) * 2)
    same_as_cpython(array_reassigned, np.arange(5.0), np.arange(3.0))  # x is b from i = 1: b[3] raises


def prange_differences(out, a):
    for i in lk.prange(len(out)):
        out[i] = a[i + 1] - a[i]


def prange_rows(out, a):
    for i in lk.prange(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = a[i, j + 1] * a[i + 1, j]


@pytest.fixture(params=["alone", "team"])
def team_threshold(request):
    lk.set_parallel_threshold(0 if request.param == "team" else 10 ** 18)
    yield request.param
    lk.set_parallel_threshold(int(os.environ.get("LORIKEET_PARALLEL_THRESHOLD", 300000)))


@pytest.mark.parametrize("backend", ["cpu", "openmp"])
def test_prange_loops(backend, team_threshold):
    # on the team the iterations of other threads may or may not have run when one raises: compare results only
    ok = team_threshold == "alone" or backend == "cpu"
    a = np.arange(1.0, 101.0)
    same_as_cpython(prange_differences, np.zeros(99), a, backend=backend)
    same_as_cpython(prange_differences, np.zeros(100), a, backend=backend, compare_args=ok)  # a[100]
    m = np.arange(1.0, 43.0).reshape(6, 7)
    same_as_cpython(prange_rows, np.zeros((5, 6)), m, backend=backend)
    same_as_cpython(prange_rows, np.zeros((5, 7)), m, backend=backend, compare_args=ok)    # a[0, 7]
    same_as_cpython(prange_rows, np.zeros((6, 6)), m, backend=backend, compare_args=ok)    # a[6, 0]


def conv_sized(x, w, k):
    h = x.shape[0] - 2
    out = np.zeros((h, x.shape[1] - 2))
    for i in range(h):
        for j in range(x.shape[1] - 2):
            s = 0.0
            for di in range(k):
                for dj in range(k):
                    s += x[i + di, j + dj] * w[di, dj]
            out[i, j] = s
    return out


def test_conv_with_a_kernel_too_big():
    x = np.arange(42.0).reshape(6, 7)
    w = np.arange(1.0, 10.0).reshape(3, 3)
    same_as_cpython(conv_sized, x, w, 3)
    same_as_cpython(conv_sized, x, w, 4)              # w[0, 3] on the first iteration
    same_as_cpython(conv_sized, x, np.ones((4, 4)), 4)  # x[3, 6]... x[0, 7]: the last column of patches


# ---------------------------------------------------------------- ZeroDivisionError and IEEE floats


def floordiv(a, b):
    return a // b


def mod(a, b):
    return a % b


def truediv(a, b):
    return a / b


def loop_floordiv(a, d):
    s = 0
    for i in range(len(a)):
        s += a[i] // d[i]
    return s


@pytest.mark.parametrize("f", [floordiv, mod])
@pytest.mark.parametrize("a,b", [(7, 0), (0, 0), (-7, 0), (np.arange(4), 0), (np.arange(4, dtype=np.int32), 0),
                                 (np.arange(4), np.array([1, 2, 0, 3])), (5, np.array([1, 0])),
                                 (np.arange(6, dtype=np.int8).reshape(2, 3), np.array([1, 0, 2], np.int8)),
                                 (np.int32(7), np.int32(0)), (np.arange(4, dtype=np.uint8), np.uint8(0))],
                         ids=["int", "zero", "neg", "i64arr", "i32arr", "arr_arr", "scalar_arr", "i8_bcast", "npi32",
                              "u8"])
def test_integer_division_by_zero_raises(f, a, b):
    with pytest.raises(ZeroDivisionError):
        lk.jit(f)(a, b)


def test_integer_division_by_zero_in_a_loop_raises():
    with pytest.raises(ZeroDivisionError):
        lk.jit(loop_floordiv)(np.arange(5), np.array([1, 1, 1, 0, 1]))


@pytest.mark.parametrize("a,b", [(1.0, 0.0), (-1.0, 0.0), (0.0, 0.0), (1.0, -0.0), (np.array([1.0, -1.0, 0.0]), 0.0),
                                 (np.array([1.0, 2.0], np.float32), np.array([0.0, 0.0], np.float32)),
                                 (3, 0.0), (np.arange(3), 0.0)])
def test_float_division_by_zero_follows_ieee(a, b):
    with np.errstate(all="ignore"):
        exp = np.true_divide(a, b)
    same(np.asarray(lk.jit(truediv)(a, b)) if np.ndim(a) == 0 else lk.jit(truediv)(a, b),
         np.asarray(exp) if np.ndim(a) == 0 else exp)


@pytest.mark.parametrize("f", [floordiv, mod])
@pytest.mark.parametrize("a", [1.0, -1.0, 0.0, np.array([1.0, -2.5, 0.0])])
def test_float_floordiv_and_mod_by_zero_follow_numpy(f, a):
    with np.errstate(all="ignore"):
        exp = f(np.float64(a) if np.ndim(a) == 0 else a, np.float64(0.0))
    got = lk.jit(f)(a, 0.0)
    same(np.asarray(got), np.asarray(exp))


def test_int_true_division_by_zero_never_crashes():
    # CPython raises ZeroDivisionError, NumPy gives inf: either is acceptable, a crash or garbage is not
    try:
        got = lk.jit(truediv)(1, 0)
    except ZeroDivisionError:
        return
    assert got == math.inf


# ---------------------------------------------------------------- calls: arguments


def two_params(a, weights):
    return a


def test_wrong_number_of_arguments_raises_type_error():
    f = lk.jit(two_params)
    assert f(1, 2) == 1
    for args, kwargs in [((), {}), ((1,), {}), ((1, 2, 3), {}), ((1,), {"bogus": 2}), ((1, 2), {"a": 1}),
                         ((), {"weights": 1})]:
        with pytest.raises(TypeError):
            f(*args, **kwargs)


def test_wrong_number_of_arguments_before_first_compile():
    with pytest.raises(TypeError):
        lk.jit(two_params)(np.ones(3))
    with pytest.raises(TypeError):
        lk.jit(two_params)(np.ones(3), 1, 2)


class Opaque:
    pass


@pytest.mark.parametrize("bad", [{"a": 1}, "text", object(), Opaque(), {1, 2}, b"bytes", np.clongdouble(1 + 2j), ["a", "b"],
                                 [[1, 2], [3]], [1, "x"], len, np.array(["a", "b"]), np.array([1 + 1j], np.clongdouble),
                                 np.array([1, None], dtype=object), np.longdouble(1.0), np.zeros(2, np.longdouble)],
                         ids=["dict", "str", "object", "instance", "set", "bytes", "clongdouble", "list_of_str",
                              "ragged_list", "mixed_list", "function", "str_array", "clongdouble_array", "object_array",
                              "longdouble", "longdouble_array"])
def test_unsupported_argument_type_raises_type_error_naming_the_parameter(bad):
    with pytest.raises(TypeError, match="weights") as e:
        lk.jit(two_params)(np.ones(3), bad)
    assert not isinstance(e.value, lk.CompileError) or "weights" in str(e.value)


def test_unsupported_argument_type_after_a_good_call():
    f = lk.jit(two_params)
    assert f(1.5, 2) == 1.5
    with pytest.raises(TypeError, match="weights"):
        f(1.5, "x")
    with pytest.raises(TypeError, match="weights"):
        f(1.5, weights={})


def total(a):
    s = 0.0
    for x in a:
        s += x
    return s, a.sum(), len(a)


def scale_first_row(a):
    return a[0] * 2


@pytest.mark.parametrize("lst", [[1, 2, 3], [1.5, -2.0, 4.25], [True, False, True], [], [7], [1, 2.5]],
                         ids=["ints", "floats", "bools", "empty", "one", "mixed"])
def test_lists_of_numbers_are_accepted_as_arrays(lst):
    original = list(lst)
    same(lk.jit(total)(lst), total(np.asarray(lst)))
    assert lst == original


def test_nested_lists_are_accepted_as_2d_arrays():
    lst = [[1.0, 2.0], [3.0, 4.0]]
    same(lk.jit(scale_first_row)(lst), scale_first_row(np.asarray(lst)))


# ---------------------------------------------------------------- inputs untouched unless written


def reads_only(a, b):
    c = a * 2.0 + b
    d = np.sqrt(np.abs(c))
    t = a.T
    return d.sum() + t.sum() + a[::-1].max() + b.min()


def writes_b_only(a, b):
    b[0] = a.sum()
    b[1:] = a[1:] * 2


@pytest.mark.parametrize("a", [A, A.T.copy().T, A[::-1], A[:, ::2]], ids=["c", "f", "rev", "step"])
def test_inputs_not_modified_unless_written(a):
    a0 = a.copy()
    b = np.ones(a.shape[1]) * 0.5
    b0 = b.copy()
    check(reads_only, a, b)
    lk.jit(reads_only)(a, b)
    same(a, a0)
    same(b, b0)
    b2 = np.zeros(a.shape)
    a2 = a.copy()
    lk.jit(writes_b_only)(a2, b2)
    same(a2, a0)  # a untouched
    ref = np.zeros(a.shape)
    writes_b_only(a0.copy(), ref)
    same(b2, ref)


def write_through_view(a):
    a[0] = -1.0
    a[-1] = -2.0


def test_writing_into_a_view_argument_writes_the_base():
    base = np.arange(10.0)
    ref = base.copy()
    write_through_view(ref[::3])
    lk.jit(write_through_view)(base[::3])
    same(base, ref)
    base = np.arange(12.0).reshape(3, 4)
    ref = base.copy()
    write_through_view(ref.T[1])
    lk.jit(write_through_view)(base.T[1])
    same(base, ref)


def test_writing_into_a_read_only_array_raises_value_error():
    # NumPy: "assignment destination is read-only"; writing anyway would corrupt an immutable bytes object here
    payload = b"\0" * 40
    frozen = np.frombuffer(payload, dtype=np.float64)
    with pytest.raises(ValueError):
        lk.jit(write_through_view)(frozen)
    assert payload == b"\0" * 40
    locked = np.arange(4.0)
    locked.flags.writeable = False
    with pytest.raises(ValueError):
        lk.jit(write_through_view)(locked)
    same(locked, np.arange(4.0))


def test_writing_into_a_broadcast_view_raises_value_error():
    base = np.arange(3.0)
    b = np.broadcast_to(base, (4, 3))  # read-only, stride 0 along axis 0
    with pytest.raises(ValueError):
        lk.jit(set2)(b, 1, 1)
    same(base, np.arange(3.0))


def reads_broadcast(a):
    return a.sum(), a[3, 2], a * 2.0


def test_reading_a_broadcast_view_matches_numpy():
    check(reads_broadcast, np.broadcast_to(np.arange(3.0), (4, 3)))


def masked_sum(a):
    return a.sum()


def test_masked_array_is_refused_or_honoured():
    # a MaskedArray is an ndarray subclass whose mask lorikeet cannot see: silently summing the masked values is wrong
    m = np.ma.masked_array([1.0, 2.0, 4.0], mask=[0, 1, 0])
    try:
        got = lk.jit(masked_sum)(m)
    except TypeError:
        return
    assert got == masked_sum(m)


# ---------------------------------------------------------------- boundscheck=False


def kernel(out, a, b):
    for i in range(len(out)):
        out[i] = math.sqrt(a[i] * a[i] + b[i] * b[i])
    return out[-1] + a[-2]


def test_boundscheck_false_compiles_and_runs_in_bounds_code():
    rng = np.random.default_rng(3)
    a, b = rng.random(101), rng.random(101)
    out, ref = np.zeros(101), np.zeros(101)
    exp = kernel(ref, a, b)
    f = lk.jit(boundscheck=False)(kernel)
    same(f(out, a, b), exp)
    same(out, ref)
    out2, ref2 = np.zeros(50), np.zeros(50)
    same(f(out2, a[::2], b[::-2]), kernel(ref2, a[::2], b[::-2]))
    same(out2, ref2)
    g = lk.jit(get2, boundscheck=False)
    assert g(A, -1, -2) == A[-1, -2]
    assert g(A.T, 2, -1) == A.T[2, -1]


# ---------------------------------------------------------------- shapes that do not fit


def add(a, b):
    return a + b


def assign_slice(a, b):
    a[1:] = b


@pytest.mark.parametrize("a,b", [(np.ones(3), np.ones(4)), (np.ones((2, 3)), np.ones(2)),
                                 (np.ones((3, 1)), np.ones((2, 4)))])
def test_broadcast_mismatch_raises_value_error(a, b):
    with pytest.raises(ValueError):
        lk.jit(add)(a, b)


def test_slice_assignment_shape_mismatch_raises_value_error():
    a = np.zeros(5)
    with pytest.raises(ValueError):
        lk.jit(assign_slice)(a, np.ones(3))
    same(a, np.zeros(5))


def empty_min(a):
    return a.min(), a.max()


def test_min_of_empty_raises_value_error():
    with pytest.raises(ValueError):
        lk.jit(empty_min)(np.zeros(0))


# ---------------------------------------------------------------- never a crash: risky cases in a child interpreter

RISKY = {
    "range_step_zero": ("def f(n):\n    s = 0\n    for i in range(0, n, 0):\n        s += i\n    return s\n", "f(10)",
                        "ValueError"),
    "slice_step_zero": ("def f(a, k):\n    return a[::k]\n", "f(np.ones(4), 0)", "ValueError"),
    "arange_step_zero": ("def f(n):\n    return np.arange(0, n, 0)\n", "f(10)", "ZeroDivisionError|ValueError"),
    # an array where np.arange takes numbers was a segfault in typing (the promotion of an array type)
    "arange_of_an_array": ("def f(a):\n    return np.arange(a)\n", "f(np.ones(4))", "CompileError"),
    "arange_to_an_array": ("def f(a):\n    return np.arange(0, a, 1)\n", "f(np.ones(4))", "CompileError"),
    "zeros_negative": ("def f(n):\n    return np.zeros(n)\n", "f(-1)", "ValueError"),
    "zeros_huge": ("def f(n):\n    return np.zeros(n)\n", "f(10**15)", "MemoryError|ValueError"),
    "empty_2d_huge": ("def f(n):\n    return np.empty((n, n))\n", "f(10**9)", "MemoryError|ValueError"),
    "empty_2d_size_overflows": ("def f(n):\n    return np.empty((n, n))\n", "f(10**10)", "MemoryError|ValueError"),
    "recursion": ("def f(n):\n    if n <= 1:\n        return 1\n    return n * f(n - 1)\n", "f(5)",
                  "CompileError|RESULT 120"),
    "mutual_recursion": ("def f(n):\n    return 0 if n == 0 else g(n - 1)\n\n"
                         "def g(n):\n    return 1 if n == 0 else f(n - 1)\n", "f(4)", "CompileError|RESULT 0"),
    "index_huge_negative": ("def f(a, i):\n    return a[i]\n", "f(np.ones(3), -(2**63))", "IndexError|OverflowError"),
    "index_too_big_for_int64": ("def f(a, i):\n    return a[i]\n", "f(np.ones(3), 2**64)",
                                "IndexError|OverflowError|TypeError"),
    # a loop's bounds test must see its forms overflow int64 (4 * (n - 1) wraps to 0 here): then the checked loop
    # runs, and a[8] raises; a test fooled by the wrap would run 2**62 iterations unchecked
    "versioned_index_bound_overflows": ("def f(a, n):\n    s = 0.0\n    for i in range(n):\n        s += a[i * 4]\n"
                                        "    return s\n", "f(np.ones(8), 2**62 + 1)", "IndexError"),
    # ... and so must the bounds of a nested loop: i + big wraps to -2**63 at i = 2 (CPython's loops are empty)
    "versioned_inner_start_overflows": ("def f(a, n, big):\n    s = 0.0\n    for i in range(n):\n"
                                        "        for j in range(i + big, n):\n            s += a[j]\n    return s\n",
                                        "f(np.ones(4), 4, 2**63 - 2)", "IndexError|RESULT 0.0"),
    "int_min_floordiv_minus_one": ("def f(a, b):\n    return a // b\n", "f(-(2**63), -1)",
                                   "RESULT|OverflowError"),
}


CHILD_TRAILER = """
import sys
import numpy as np
import lorikeet as lk

sys.setrecursionlimit(10000)
try:
    r = lk.jit(f){args}
    print("RESULT", r)
except Exception as e:
    print(type(e).__name__, str(e).splitlines()[0] if str(e) else "")
"""


def run_child(src, call, tmp_path):
    """Runs `src` and then lk.jit(f)(...) for call "f(...)" in a fresh interpreter; returns the CompletedProcess."""
    path = tmp_path / "risky_case.py"
    path.write_text("import numpy as np\n\n" + src + CHILD_TRAILER.replace("{args}", call[1:]))
    env = dict(os.environ, PYTHONPATH=PYSHIM)
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=30, env=env)


@pytest.mark.parametrize("name", list(RISKY))
def test_risky_cases_never_crash_or_hang(name, tmp_path):
    src, call, expected = RISKY[name]
    try:
        p = run_child(src, call, tmp_path)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{name}: hung for 30 s")
    assert p.returncode == 0, f"{name}: the interpreter died (rc {p.returncode}):\n{p.stdout}\n{p.stderr[-3000:]}"
    assert re.match(expected, p.stdout.strip()), f"{name}: {p.stdout.strip()!r} is not {expected}"
