"""Data larger than the device (issue 13, item 5): a call whose arrays exceed the device's memory runs in pieces
along the first axis (maps, reductions with their partials combined, the rows of a product), and its results
equal the unsplit call's and NumPy's; where it cannot run in pieces it raises lorikeet.DeviceMemoryError naming
the line and the sizes.

LORIKEET_GPU_MEMORY_LIMIT lowers the limit; on the cpu and openmp backends LORIKEET_SPLIT_TEST=1 runs the same
driver through host memory, so everything here runs on any machine (and on the gpu, LORIKEET_BACKEND=gpu, through
the device). A limit of a few KB splits these arrays into dozens of pieces of a few rows."""
import inspect

import numpy as np
import pytest

import lorikeet as lk
from lorikeet import _lorikeet
from helpers import J

RNG = np.random.default_rng(13)


@pytest.fixture
def limit(monkeypatch):
    """limit("4K") makes calls over 4 KB of arrays run in pieces, for the rest of the test."""
    def set_limit(text):
        monkeypatch.setenv("LORIKEET_SPLIT_TEST", "1")
        monkeypatch.setenv("LORIKEET_GPU_MEMORY_LIMIT", text)
        _lorikeet._split_reload_env()
    yield set_limit
    monkeypatch.undo()
    _lorikeet._split_reload_env()


def pieces(fn, *args):
    """fn(*args) and how many pieces it ran as (0: not split)."""
    before = _lorikeet._split_stats()
    r = fn(*args)
    after = _lorikeet._split_stats()
    return r, (after["pieces"] - before["pieces"] if after["calls"] > before["calls"] else 0)


def line_of(fn, text):
    """The file line of fn's source that contains text."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, l in enumerate(lines) if text in l)


# ---- functions that run in pieces ----

def fused(a, b, c):
    return np.sqrt(a * a + b * b) * np.exp(-c)


def broadcast_row(a, w, s):
    return (a - w) * s + 1.0


def total(a, b):
    return (a * b).sum()


def extremes(a):
    return a.min(), a.max(), np.nanmin(a), np.nanmax(a)


def product(a):
    return np.prod(a)


def logic(m):
    return m.any(), m.all()


def int_sum(a):
    return a.sum()


def row_sums(a):
    return a.sum(axis=1)


def row_cumsum(a):
    return np.cumsum(a, axis=1)


def rows_times(a, b):
    return a @ b


def rows_times_t(a, b):
    return a @ b.T


def map_and_max(a, b):
    return a * 2.0 + b, (a * b).max()


def with_width(a):
    return a * a.shape[1]


def of_3d(a):
    return a.sum(axis=2) + 1.0


def int_floordiv(a, b):
    return a // b


# ---- functions that cannot ----

def carried(a):
    s = 0.0
    for i in range(a.shape[0]):
        s = s * 0.5 + a[i, 0]
    return s


def normalised(a):
    return a / a.max()


def mean(a):
    return a.mean()


def column_sums(a):
    return a.sum(axis=0)


def running(a):
    return np.cumsum(a)


def first_row(a):
    return a * a[0, 0]


def where_argmin(a):
    return a.argmin()


def where_argmax_of_square(a):
    return (a * a).argmax()


def spread(a):
    return (a - a.min()) / (a.max() - a.min())


def test_plans_say_how_each_argument_and_result_is_split():
    a, b, c = (RNG.standard_normal((40, 3)) for _ in range(3))
    p = J(fused).inspect_split(a, b, c)
    assert p["splittable"] and p["args"] == ["rows", "rows", "rows"] and p["results"] == ["concatenate"]
    p = J(broadcast_row).inspect_split(a, c[0], 2.0)
    assert p["args"] == ["rows", "whole", "scalar"] and p["results"] == ["concatenate"]
    assert J(total).inspect_split(a, b)["results"] == ["combine add"]
    assert J(map_and_max).inspect_split(a, b)["results"] == ["concatenate", "combine max"]
    assert J(rows_times).inspect_split(a, b.T.copy())["args"] == ["rows", "whole"]
    assert J(row_sums).inspect_split(a)["results"] == ["concatenate"]
    # the four reductions share one pass (a one_pass tuple): each item still combines across pieces
    assert "one_pass" in J(extremes).inspect_types(a)
    assert J(extremes).inspect_split(a)["results"] == ["combine min", "combine max", "combine nanmin", "combine nanmax"]


@pytest.mark.parametrize("fn,text,reason", [
    (carried, "for i in range", "a loop"),
    (normalised, "a / a.max()", "a reduction over all rows"),
    (mean, "a.mean()", "feeds other code"),
    (column_sums, "axis=0", "along axis 0"),
    (running, "np.cumsum(a)", "flattened"),
    (first_row, "a[0, 0]", "indexing"),
    (where_argmax_of_square, "(a * a).argmax()", "argmin or argmax of an expression"),
    (spread, "(a - a.min()) / (a.max() - a.min())", "a reduction over all rows"),
])
def test_plans_name_the_line_that_prevents_a_split(fn, text, reason):
    a = RNG.standard_normal((40, 3))
    p = J(fn).inspect_split(a)
    assert not p["splittable"]
    assert reason in p["reason"], p["reason"]
    assert p["line"] == line_of(fn, text), p


def check_split(limit, fn, *args, exact=True):
    """fn's result with the limit (run in pieces: at least 3) equals the unsplit call's and the plain one's."""
    f = J(fn)
    whole = f(*args)
    limit("2K")
    split, n = pieces(f, *args)
    assert n >= 3, n
    want = fn(*args)
    for got, ref, py in zip(np.atleast_1d(split) if not isinstance(split, tuple) else split,
                            np.atleast_1d(whole) if not isinstance(whole, tuple) else whole,
                            np.atleast_1d(want) if not isinstance(want, tuple) else want):
        assert np.asarray(got).dtype == np.asarray(ref).dtype
        if exact:
            np.testing.assert_array_equal(got, ref)
        else:
            np.testing.assert_allclose(got, ref, rtol=1e-12)
        rtol = {np.dtype(np.float32): 1e-5, np.dtype(np.float16): 1e-2}.get(np.asarray(got).dtype, 1e-9)
        np.testing.assert_allclose(got, py, rtol=rtol)
    return split


def test_a_fused_map_runs_in_pieces_and_equals_the_whole_call(limit):
    a, b, c = (RNG.standard_normal((500, 3)) for _ in range(3))
    check_split(limit, fused, a, b, c)


def test_arrays_of_fewer_dims_and_scalars_are_passed_whole(limit):
    a = RNG.standard_normal((300, 4))
    w = RNG.standard_normal(4)
    check_split(limit, broadcast_row, a, w, 3.0)


def test_strided_and_reversed_arguments(limit):
    big = RNG.standard_normal((900, 6))
    check_split(limit, fused, big[::3, :3], big[::-3, 1:4], big[1::3, 5:2:-1])
    check_split(limit, row_sums, big[::-2, ::2])


def test_reductions_combine_their_pieces(limit):
    a, b = RNG.standard_normal((400, 3)), RNG.standard_normal((400, 3))
    check_split(limit, total, a, b, exact=False)
    x = RNG.standard_normal((400, 3))
    x[17, 1] = np.nan
    got = check_split(limit, extremes, x)
    assert np.isnan(got[0]) and np.isnan(got[1]) and not np.isnan(got[2])
    check_split(limit, product, RNG.uniform(0.9, 1.1, (400, 2)), exact=False)
    m = RNG.standard_normal((3000, 2)) > 2.5
    check_split(limit, logic, m)
    check_split(limit, logic, np.ones((3000, 2), bool))


def test_argmin_and_argmax_compare_the_pieces_elements(limit):
    a = RNG.standard_normal((500, 3))
    check_split(limit, where_argmin, a)
    a[[40, 300], [1, 2]] = -9.0  # two equal minima in different pieces: the first
    assert check_split(limit, where_argmin, a) == 121
    a[200, 0] = np.nan  # the first NaN counts as the extreme
    a[400, 0] = np.nan
    assert check_split(limit, where_argmin, a) == 600
    check_split(limit, where_argmin, a[::-2, 1:])
    check_split(limit, where_argmin, RNG.integers(-5, 5, 1500))
    check_split(limit, where_argmin, RNG.integers(0, 2**64 - 1, 700, dtype=np.uint64))
    assert J(where_argmin).inspect_split(a)["results"] == ["combine argmin"]


def test_integer_sums_wrap_as_the_whole_call_does(limit):
    a = RNG.integers(-2**62, 2**62, (500, 2), dtype=np.int64)
    check_split(limit, int_sum, a)
    check_split(limit, int_sum, RNG.integers(0, 1000, (900, 2), dtype=np.int32))


def test_float32_and_float16_results(limit):
    a = RNG.standard_normal((600, 2)).astype(np.float32)
    check_split(limit, fused, a, a, a)
    check_split(limit, map_and_max, a, a)
    h = RNG.standard_normal((900, 2)).astype(np.float16)
    check_split(limit, extremes, h)


def test_row_wise_reductions_scans_and_products(limit):
    a = RNG.standard_normal((300, 5))
    check_split(limit, row_sums, a)
    check_split(limit, row_cumsum, a)
    check_split(limit, rows_times, a, RNG.standard_normal((5, 4)), exact=False)
    check_split(limit, rows_times_t, a, RNG.standard_normal((6, 5)), exact=False)
    check_split(limit, of_3d, RNG.standard_normal((100, 3, 4)))
    check_split(limit, with_width, a)


def test_tuple_results(limit):
    a, b = RNG.standard_normal((400, 3)), RNG.standard_normal((400, 3))
    check_split(limit, map_and_max, a, b)


def test_under_the_limit_nothing_is_split(limit):
    a = RNG.standard_normal((10, 3))
    limit("1M")
    r, n = pieces(J(fused), a, a, a)
    assert n == 0
    np.testing.assert_allclose(r, fused(a, a, a))


def test_a_call_that_cannot_be_split_raises_naming_the_line_and_sizes(limit):
    a = RNG.standard_normal((400, 3))
    cases = [(carried, "for i in range"), (normalised, "a / a.max()")]
    for fn, _ in cases:
        J(fn)(a)  # compiled, and it runs whole under no limit
    limit("2K")
    for fn, text in cases:
        with pytest.raises(lk.DeviceMemoryError) as e:
            J(fn)(a)
        msg = str(e.value)
        assert isinstance(e.value, MemoryError)
        assert f"{a.nbytes} bytes" in msg, msg
        assert "2048 bytes" in msg and "LORIKEET_GPU_MEMORY_LIMIT" in msg, msg
        assert e.value.lk_line == line_of(fn, text), msg
        assert text in msg


def test_rows_of_different_lengths_are_not_split(limit):
    a, b = RNG.standard_normal((400, 3)), RNG.standard_normal((1, 3))
    f = J(fused)
    limit("2K")
    with pytest.raises(lk.DeviceMemoryError, match="first axes of different lengths"):
        f(a, b, a)


def test_an_error_in_a_piece_is_the_whole_call_s(limit):
    a = RNG.integers(1, 9, (400, 2))
    b = RNG.integers(1, 9, (400, 2))
    b[301, 1] = 0
    f = J(int_floordiv)
    with pytest.raises(ZeroDivisionError) as whole:
        f(a, b)
    limit("2K")
    with pytest.raises(ZeroDivisionError) as split:
        f(a, b)
    assert str(split.value) == str(whole.value)
    b[301, 1] = 3
    check_split(limit, int_floordiv, a, b)


def test_a_limit_that_is_not_a_size_is_a_value_error(limit):
    a = RNG.standard_normal((10, 3))
    limit("lots")
    with pytest.raises(ValueError, match="LORIKEET_GPU_MEMORY_LIMIT"):
        J(fused)(a, a, a)


def test_limits_take_suffixes(limit):
    a = RNG.standard_normal((4000, 2))  # 64000 bytes an argument, 128000 the call
    for text, split in [("1M", False), ("200K", False), ("0.1M", True), ("100K", True), ("127999", True),
                        ("128000", False), ("1G", False), ("1g", False), ("100kB", True)]:
        limit(text)
        _, n = pieces(J(total), a, a)
        assert (n > 0) == split, text
