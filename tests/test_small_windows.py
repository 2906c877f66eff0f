"""Reductions over small windows (issue 15, item 2): `(x[i-1:i+2, j-1:j+2] * w).sum()`, `x[i:i+3].max()`,
`np.dot(x[i:i+3], w)` and the like, where the window's extent is a constant, become unrolled loads under a test
that the window lies inside the array (ir/small_windows.c), and a comprehension whose windows are inside for every
element tests that once per call (ir/version_imaps.c). Where a window is not inside (NumPy clamps it at the end,
counts a negative start from the end, broadcasts a length 1, or raises a shape error) the reduction runs as
before: the results and errors are CPython's running the same function with NumPy, on every backend."""
import importlib.util
import re

import numpy as np
import pytest

import lorikeet as lk
from helpers import J, skip_on_gpu

RNG = np.random.default_rng(15)


def conv_3x3_trim(x, weights):  # Parakeet's, as benchmarks/workloads/conv.py has it
    return np.array([[(x[i - 1:i + 2, j - 1:j + 2] * weights).sum()
                      for j in range(1, x.shape[1] - 2)]
                     for i in range(1, x.shape[0] - 2)])


def box_sum_all(x):  # every window, those past the edges included
    return np.array([[np.sum(x[i - 1:i + 2, j - 1:j + 2]) for j in range(x.shape[1])] for i in range(x.shape[0])])


def box_max(x):
    return np.array([x[i:i + 3].max() for i in range(x.shape[0])])


def box_min_from_minus_one(x):
    return np.array([x[i - 1:i + 2].min() for i in range(1, x.shape[0])])


def window_mean(x):
    return np.array([np.mean(x[i:i + 4]) for i in range(x.shape[0] - 3)])


def window_dot(x, w):
    return np.array([np.dot(x[i:i + 3], w) for i in range(x.shape[0] - 2)])


def window_prod(x):
    return np.array([np.prod(x[i:i + 2]) for i in range(x.shape[0] - 1)])


def weighted_1d(x, w):  # clamped windows against 3 weights: NumPy's shape error, or a broadcast of a length 1
    return np.array([(x[i - 1:i + 2] * w).sum() for i in range(x.shape[0])])


def row_windows(x):  # an integer and a slice; i - 1 of -1 is the last row, as in NumPy
    return np.array([[x[i - 1, j:j + 3].sum() for j in range(x.shape[1] - 2)] for i in range(x.shape[0])])


def row_index_out_of_range(x):
    return np.array([[x[i + 1, j:j + 3].sum() for j in range(x.shape[1] - 2)] for i in range(x.shape[0])])


def stencil_loops(x, out):  # the loop form's body holding a window
    for i in range(x.shape[0]):
        for j in range(1, x.shape[1] - 1):
            out[i, j] = np.sum(x[i - 1:i + 2, j - 1:j + 2])
    return out


def window_any(b):
    return np.array([b[i:i + 3].any() for i in range(b.shape[0] - 2)])


def window_nanmax(x):
    return np.array([np.nanmax(x[i:i + 3]) for i in range(x.shape[0] - 2)])


def ratio_of_windows(x, y):  # two windows in one map, a scalar in the body
    return np.array([(x[i:i + 3] * y[i + 1:i + 4] + 0.5).sum() for i in range(x.shape[0] - 3)])


def broadcast_windows(x, y):  # a window of extent 1 against one of 3, both orders
    return np.array([(x[i:i + 1] * y[i:i + 3]).sum() + (y[i:i + 3] * x[i + 1:i + 2]).max() for i in range(x.shape[0] - 2)])


def variable_extent(x, k):  # not a constant: the reduction stays as it was
    return np.array([x[i:i + k].sum() for i in range(x.shape[0] - k + 1)])


def large_window(x):  # 100 elements: beyond the unrolling's limit
    return np.array([x[i:i + 100].sum() for i in range(x.shape[0] - 99)])


def negative_constant_start(x):
    return np.array([x[-3:-1].sum() + x[i] for i in range(x.shape[0])])


def reference(fn, *args):
    """CPython running fn with NumPy: its value, or the class of the exception it raised."""
    try:
        return fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    except Exception as e:  # noqa: BLE001 - the class is the expected result
        return type(e)


def check(fn, *args, exact=False):
    want = reference(fn, *args)
    if isinstance(want, type):
        with pytest.raises(want):
            J(fn)(*args)
        return
    got = J(fn)(*args)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    if exact or want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def ints_as(dtype, shape):
    """Small integers, so that float sums are exact in any order and integer sums do not wrap."""
    return RNG.integers(-8, 9, size=shape).astype(dtype)


@pytest.mark.parametrize("shape", [(4, 4), (5, 7), (9, 6), (30, 31)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.int64])
def test_conv_3x3_trim_is_numpys_for_every_dtype_and_shape(shape, dtype):
    check(conv_3x3_trim, ints_as(dtype, shape), ints_as(dtype, (3, 3)), exact=True)


def test_conv_3x3_trim_of_random_floats_and_of_strided_views():
    x, w = RNG.standard_normal((40, 50)), RNG.standard_normal((3, 3))
    check(conv_3x3_trim, x, w)
    check(conv_3x3_trim, x[::2, ::3], w)       # strides in both axes
    check(conv_3x3_trim, x.T, w[:, ::-1])      # a transposed image, reversed weights
    check(conv_3x3_trim, np.asfortranarray(x), w)


@pytest.mark.parametrize("wshape", [(2, 3), (3, 1), (1, 3), (1, 1), (3, 4)])
def test_weights_of_another_shape_broadcast_or_raise_as_in_numpy(wshape):
    x = ints_as(np.float64, (8, 9))
    check(conv_3x3_trim, x, ints_as(np.float64, wshape), exact=True)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7])
def test_windows_past_the_edges_are_numpys_clamped_windows(n):
    x = ints_as(np.float64, (n, n + 1))
    check(box_sum_all, x, exact=True)
    check(box_max, ints_as(np.int64, (n + 2,)))
    check(box_min_from_minus_one, ints_as(np.float32, (n + 1,)))


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_a_clamped_window_against_weights_broadcasts_or_raises_as_in_numpy(n):
    # n = 2: x[-1:2] is x[1:2], a length 1 that broadcasts against the 3 weights; n = 5: x[4:7] has 1 element
    check(weighted_1d, ints_as(np.float64, (n,)), ints_as(np.float64, (3,)), exact=True)
    check(weighted_1d, ints_as(np.float64, (n,)), ints_as(np.float64, (1,)), exact=True)


def test_mean_dot_prod_any_and_nanmax_of_windows():
    x = RNG.standard_normal(50)
    check(window_mean, x)
    check(window_dot, x, RNG.standard_normal(3))
    check(window_dot, x, RNG.standard_normal(4))   # np.dot's shape error
    check(window_dot, ints_as(np.int32, (20,)), ints_as(np.int32, (3,)))
    check(window_prod, ints_as(np.int16, (20,)))
    check(window_any, RNG.integers(0, 2, 30).astype(bool))
    y = x.copy()
    y[[3, 10, 11, 12]] = np.nan
    check(window_nanmax, y)
    check(ratio_of_windows, x, RNG.standard_normal(50))
    check(broadcast_windows, x, RNG.standard_normal(50))


def test_an_integer_item_wraps_when_negative_and_raises_out_of_range():
    x = ints_as(np.int64, (5, 6))
    check(row_windows, x)                 # row -1 is the last: the general arm's wrap
    check(row_index_out_of_range, x)      # row 5: IndexError


def test_the_index_error_names_the_line():
    with pytest.raises(IndexError) as e:
        J(row_index_out_of_range)(ints_as(np.int64, (5, 6)))
    line = row_index_out_of_range.__code__.co_firstlineno + 1
    assert f"line {line}" in str(e.value) or str(line) in str(e.value), str(e.value)


def test_windows_in_a_loop_body():
    x = ints_as(np.float64, (6, 7))
    got = J(stencil_loops)(x, np.zeros((6, 7)))
    np.testing.assert_array_equal(got, stencil_loops(x, np.zeros((6, 7))))


def test_what_is_not_a_small_constant_window_stays_as_it_was():
    x = RNG.standard_normal(120)
    check(variable_extent, x, 3)
    check(large_window, x)
    check(negative_constant_start, x)
    for fn, args in ((variable_extent, (x, 3)), (large_window, (x,)), (negative_constant_start, (x,))):
        ir = J(fn).inspect_types(*args)
        assert " if versioned" not in ir and "!proven" not in ir, ir


def test_random_offsets_and_extents_against_numpy(tmp_path):
    """Windows x[i + a:i + b] and x[i + a:i + b, j + c:j + d] of every small offset, over ranges that run past
    both ends, compiled from a module written here (each function its own constants)."""
    lines = ["import numpy as np"]
    cases = []
    for a in (-3, -1, 0, 2):
        for k in (1, 2, 3):
            name = f"w1_{a + 3}_{k}"
            lines.append(f"def {name}(x):\n    return np.array([x[i + ({a}):i + ({a + k})].sum() "
                         f"for i in range(-2, x.shape[0] + 2)])")
            cases.append((name, 1))
            name = f"w2_{a + 3}_{k}"
            lines.append(f"def {name}(x, w):\n    return np.array([[(x[i + ({a}):i + ({a + k}), j - 1:j + 1] * w).sum() "
                         f"for j in range(x.shape[1])] for i in range(x.shape[0])])")
            cases.append((name, 2))
    path = tmp_path / "windows_generated.py"
    path.write_text("\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location("windows_generated", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    for name, kind in cases:
        fn = getattr(mod, name)
        for n in (1, 3, 6):
            if kind == 1:
                check(fn, ints_as(np.float64, (n,)), exact=True)
            else:
                k = int(name.rsplit("_", 1)[1])
                check(fn, ints_as(np.float64, (n, n + 2)), ints_as(np.float64, (k, 2)), exact=True)


# ---------------------------------------------------------------- what the IR and the allocator show

def test_the_comprehension_reads_elements_not_views():
    x, w = np.zeros((10, 10)), np.zeros((3, 3))
    ir = J(conv_3x3_trim).inspect_types(x, w)
    fast, general = ir.split("    else:\n")
    assert re.search(r"^\s+if versioned", fast, re.M)   # one test before the imap
    copy = fast.split("if versioned", 1)[1]
    assert "reduce[" not in copy and not re.search(r"(?<![A-Za-z0-9_])map\(", copy), copy
    items = re.findall(r"\[([^\[\]]*)\]", re.sub(r":(int64|float64)\b", "", copy))
    assert items and not any(":" in it for it in items), items  # no slice: no view
    assert len(re.findall(r"x\[[^\]]*\]!proven", copy)) == 9 and len(re.findall(r"weights\[[^\]]*\]!proven", copy)) == 9
    assert "reduce[add](map(" in general  # the imap as typespec wrote it, for inputs where the test fails


def test_the_window_test_is_once_per_call_and_the_element_test_stays_where_windows_cross_an_edge():
    ir = J(box_sum_all).inspect_types(np.zeros((5, 5)))
    assert not re.search(r"^\s+if versioned", ir, re.M)  # i - 1 from i = 0 is never inside: no test before the imap
    assert ir.count(" if versioned ") == 1               # the element's own test
    assert "!proven" in ir


def test_a_window_reduction_allocates_nothing():
    skip_on_gpu("counts the host allocator's buffers")
    x, w = RNG.standard_normal((30, 30)), RNG.standard_normal((3, 3))
    d = J(conv_3x3_trim)
    d(x, w)
    before = lk.runtime.stats()["allocations"]
    d(x, w)
    assert lk.runtime.stats()["allocations"] - before == 1  # the result alone
    d = J(box_sum_all)
    d(x)
    before = lk.runtime.stats()["allocations"]
    d(x)
    assert lk.runtime.stats()["allocations"] - before == 1


def test_cpu_and_openmp_agree_bit_for_bit():
    skip_on_gpu("compares the two llvm backends")
    x, w = RNG.standard_normal((64, 70)), RNG.standard_normal((3, 3))
    a = lk.jit(conv_3x3_trim, backend="cpu")(x, w)
    b = lk.jit(conv_3x3_trim, backend="openmp")(x, w)
    assert a.tobytes() == b.tobytes()


# ---------------------------------------------------------------- the gpu backend's kernels, emulated on the host

def test_the_gpu_kernels_of_both_copies_give_the_cpu_backends_bits():
    """The comprehension's two kernels (the copy whose element is the unrolled loads, and the imap as typespec
    wrote it) run by tests/gpu_emulate.py: each gives the cpu backend's result, bit for bit."""
    gpu_emulate = pytest.importorskip("gpu_emulate")
    if gpu_emulate.CXX is None:
        pytest.skip("no C++ compiler to run the kernels on the host")
    x, w = RNG.standard_normal((9, 11)), RNG.standard_normal((3, 3))
    want = lk.jit(conv_3x3_trim, backend="cpu")(x, w)
    src = lk.jit(conv_3x3_trim).inspect_cuda(x, w)
    mod = gpu_emulate.Module(src)
    assert len(mod.kernels) == 2
    for k in range(2):
        out = np.zeros(want.shape)

        def fill(mod, slots, lay):
            slots[lay["n"]] = out.size
            slots[lay["dims"]], slots[lay["dims"] + 1] = out.shape
            mod.keep.append(out)
            slots[lay["out"]] = out.ctypes.data
            slots[lay["out"] + 1:lay["out"] + 3] = out.strides
            mod.value(slots, lay["uses"]["x"], x)
            mod.value(slots, lay["uses"]["weights"], w)
        _, err = mod.launch(k, fill, grid=2, block=32)
        assert err is None, err
        assert out.tobytes() == want.tobytes(), k
