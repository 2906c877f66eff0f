"""What the gpu backend's kernels compute, checked without a GPU: the CUDA C of inspect_cuda compiled for the host
by gpu_emulate.py (block threads as host threads, barriers, shuffles through memory) and launched over small grids
with the parameter block filled as kernel_abi.h says, against the cpu backend and NumPy. The scalar rules of
ir.h elementwise, the lowest failing work item's error, reductions of every op and dtype over several blocks
(partials, the last block's combine, the ticket left zero), prange reductions, axis reductions, scans, index
maps and a prange whose body loops and calls a device function; float16 (NumPy's bits: 16 bits in memory,
float32 arithmetic rounded once per operation by the preamble's own conversions) in maps, casts, reductions,
scans and a prange; and the chunked scan of everything and the reductions at sizes around its tiles (the blocks
run one after another here, so a block's wait for the chunks before it always ends)."""
import math

import numpy as np
import pytest

import lorikeet as lk
from helpers import prange_reductions
import test_scalar_semantics as sem
from gpu_emulate import CXX, Module, as_float

pytestmark = pytest.mark.skipif(CXX is None, reason="no C++ compiler to run the kernels on the host")

ERR_CLASS = {1: IndexError, 4: ZeroDivisionError, 5: ValueError, 6: ValueError}  # RtErrCode -> exception


def fill_map(inputs, out):
    """A MAP kernel's block: the space is out's shape; inputs broadcast against it."""
    def fill(mod, slots, lay):
        slots[lay["n"]] = out.size
        for d in range(out.ndim):
            slots[lay["dims"] + d] = out.shape[d]
        if lay["flat_ok"] >= 0:
            slots[lay["flat_ok"]] = int(all(not isinstance(x, np.ndarray) or (x.shape == out.shape and x.flags.c_contiguous)
                                            for x in inputs) and out.flags.c_contiguous)
        for i, x in enumerate(inputs):
            at = lay["in"][i]
            if isinstance(x, np.ndarray):
                b = np.broadcast_to(x, out.shape[out.ndim - x.ndim:]) if x.ndim else x
                mod.keep.append(x)
                slots[at] = x.ctypes.data
                slots[at + 1:at + 1 + x.ndim] = b.strides
            else:
                mod.scalar(slots, at, x)
        if lay["out"] >= 0:
            mod.keep.append(out)
            slots[lay["out"]] = out.ctypes.data
            slots[lay["out"] + 1:lay["out"] + 1 + out.ndim] = out.strides
    return fill


def bits_equal(got, want):
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype.kind == "f":
        return bool(np.all((got == want) & (np.signbit(got) == np.signbit(want)) | (np.isnan(got) & np.isnan(want))))
    return bool(np.all(got == want))


@pytest.mark.parametrize("row", [r for r in sem.ROWS if sem.elementwise(r)], ids=sem.row_id)
def test_the_scalar_rules_elementwise_in_a_kernel(row):
    rule, fn, dtype, cases, ref = row
    columns = [np.array([sem.lk_args(case, dtype)[k] for case in cases], dtype=dtype) for k in range(len(cases[0]))]
    cpu = sem.run(lk.jit(fn), columns)
    mod = Module(lk.jit(fn).inspect_cuda(*columns))
    out_dtype = cpu.dtype if isinstance(cpu, np.ndarray) else np.result_type(*columns)
    if fn is sem.truediv:
        out_dtype = np.float64
    out = np.zeros(len(cases), dtype=out_dtype)
    _, err = mod.launch(0, fill_map(columns, out), grid=1, block=32)
    if isinstance(cpu, type):
        assert err is not None and issubclass(cpu, ERR_CLASS[err[1]]), f"{rule}: kernel gave {err}, cpu {cpu.__name__}"
        return
    assert err is None, f"{rule}: the kernel raised {err}"
    assert bits_equal(out, cpu), f"{rule}: kernel {out!r}, cpu {cpu!r}"


def gather(a, idx):
    return np.array([a[i] for i in idx])


def test_the_lowest_failing_work_item_is_the_error_whatever_the_grid():
    a = np.arange(10.0)
    idx = np.zeros(700, dtype=np.int64)
    idx[[650, 301, 77, 500]] = [40, 31, 27, 55]  # work item 77 fails first: index 27
    mod = Module(lk.jit(gather).inspect_cuda(a, idx))
    lay = mod.kernels[0].layout
    out = np.zeros(len(idx))
    for grid, block in ((1, 32), (3, 64), (2, 256)):
        def fill(mod, slots, lay):
            fill_map([idx], out)(mod, slots, lay)
            mod.value(slots, lay["uses"]["a"], a)
        _, err = mod.launch(0, fill, grid=grid, block=block)
        assert err is not None and err[1] == 1 and err[3] == (27, 10, 0), (grid, block, err)
        assert err[2] == gather.__code__.co_firstlineno + 1
    assert lay["in"]


def reduce_fill(a):
    def fill(mod, slots, lay):
        slots[lay["n"]] = a.size
        for d in range(a.ndim):
            slots[lay["dims"] + d] = a.shape[d]
        if lay["flat_ok"] >= 0:
            slots[lay["flat_ok"]] = int(a.flags.c_contiguous)
        mod.keep.append(a)
        slots[lay["in"][0]] = a.ctypes.data
        slots[lay["in"][0] + 1:lay["in"][0] + 1 + a.ndim] = a.strides
    return fill


def r_sum(a): return np.sum(a)
def r_prod(a): return np.prod(a)
def r_min(a): return np.min(a)
def r_max(a): return np.max(a)
def r_argmin(a): return np.argmin(a)
def r_argmax(a): return np.argmax(a)
def r_nanmin(a): return np.nanmin(a)
def r_nanmax(a): return np.nanmax(a)
def r_any(a): return np.any(a)
def r_all(a): return np.all(a)


def sample(dtype, n, rng):
    if dtype == np.bool_:
        return rng.random(n) > 0.3
    if np.dtype(dtype).kind == "f":
        a = (rng.random(n) * 4 - 2).astype(dtype)
        a[rng.integers(0, n, 3)] = np.nan if n > 500 else a[0]
        a[n // 3] = a.max(initial=0)  # a tie for argmax
        return a
    info = np.iinfo(dtype)
    lo, hi = (max(info.min, -3), min(info.max, 4)) if np.dtype(dtype).kind == "i" else (0, min(info.max, 4))
    return rng.integers(lo, hi, n).astype(dtype)


# nanmin/nanmax only over floats: of integers they are min/max, already in the table
REDUCTION_CASES = [(fn, dt) for fn in (r_sum, r_prod, r_min, r_max, r_argmin, r_argmax, r_nanmin, r_nanmax, r_any, r_all)
                   for dt in (np.int8, np.int64, np.uint64, np.float32, np.float64, np.bool_)
                   if fn not in (r_nanmin, r_nanmax) or np.dtype(dt).kind == "f"]
# float16: the extremes reduce float16 values (exact), sum accumulates in float32 as NumPy's does (the host rounds
# the kernel's float32 result); prod of a thousand float16 values only over- or underflows
REDUCTION_CASES += [(fn, np.float16) for fn in (r_sum, r_min, r_max, r_argmin, r_argmax, r_nanmin, r_nanmax, r_any)]


@pytest.mark.parametrize("fn,dtype", REDUCTION_CASES, ids=[f"{f.__name__}-{np.dtype(d).name}" for f, d in REDUCTION_CASES])
def test_a_reduction_over_blocks_is_the_cpu_s(fn, dtype):
    rng = np.random.default_rng(7)
    mod = Module(lk.jit(fn).inspect_cuda(sample(dtype, 10, rng)))
    for n, grid, block in ((1000, 3, 64), (1001, 5, 32), (600, 1, 256), (7, 4, 32)):
        a = sample(dtype, n, rng)
        want = lk.jit(fn)(a)
        res, err = mod.launch(len(mod.kernels) - 1, reduce_fill(a), grid=grid, block=block)
        assert err is None
        if fn in (r_argmin, r_argmax):
            assert res[0] == want, (n, grid, block)
        elif dtype == np.float16 and fn is not r_any:
            got = np.float16(as_float(res[0]))  # the kernel's value (float32 for sum), rounded as the host does
            if fn is r_sum:  # float32 sums in another order: the same float16, or its neighbour
                assert (np.isnan(got) and np.isnan(want)) or abs(float(got) - float(want)) <= float(np.spacing(abs(want)))
            else:
                assert bits_equal(got, want), (fn.__name__, n, grid, block, got, want)
        elif isinstance(want, (float, np.floating)):
            got = as_float(res[0])
            assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want, rel=1e-5 if dtype == np.float32 else 1e-12)
        else:
            assert np.array(res[0]).astype(np.asarray(want).dtype) == want


@pytest.mark.parametrize("fn", [r_sum, r_min, r_argmax])
def test_an_empty_reduction_gives_the_identity_or_raises(fn):
    a = np.zeros(0)
    mod = Module(lk.jit(fn).inspect_cuda(a))
    res, err = mod.launch(0, reduce_fill(a), grid=1, block=32)
    if fn is r_sum:
        assert err is None and as_float(res[0]) == 0.0
    else:
        assert err is not None and err[1] == 6 and err[3][0] == 3  # ValueError: RT_VAL_EMPTY_REDUCE


def test_prange_reductions_combine_over_blocks():
    a = np.random.default_rng(1).random(3000)
    mod = Module(lk.jit(prange_reductions).inspect_cuda(a))
    def fill(mod, slots, lay):
        slots[lay["n"]] = len(a)
        slots[lay["start"]], slots[lay["step"]] = 0, 1
        for name, v in (("a", a), ("s", 0.0), ("m", -1e300), ("c", 0), ("i", 0)):
            if name in lay["uses"]:
                mod.value(slots, lay["uses"][name], v)
    res, err = mod.launch(0, fill, grid=4, block=64)
    assert err is None
    assert as_float(res[0]) == pytest.approx(a.sum(), rel=1e-12)
    assert as_float(res[1]) == a.max() and res[2] == len(a)


def collatz(n, out):
    for i in lk.prange(n):
        out[i] = steps_of(i)
    return out


def steps_of(k):
    steps = 0
    while k > 1:
        k = k // 2 if k % 2 == 0 else 3 * k + 1
        steps += 1
    return steps


def test_a_prange_body_loops_and_calls_a_device_function():
    out = np.zeros(100, dtype=np.int64)
    mod = Module(lk.jit(collatz).inspect_cuda(100, out))
    def fill(mod, slots, lay):
        slots[lay["n"]] = 100
        slots[lay["start"]], slots[lay["step"]] = 0, 1
        for name, v in (("n", 100), ("out", out), ("i", 0)):
            if name in lay["uses"]:
                mod.value(slots, lay["uses"][name], v)
    _, err = mod.launch(0, fill, grid=2, block=32)
    assert err is None
    assert list(out) == [steps_of(k) for k in range(100)]


def axis_sum1(a): return a.sum(axis=1)
def axis_argmin0(a): return np.argmin(a, axis=0)
def cumsum_all(a): return np.cumsum(a)
def cumsum_axis1(a): return np.cumsum(a, axis=1)


@pytest.mark.parametrize("fn, out_shape, lines", [(axis_sum1, lambda a: (a.shape[0],), None),
                                                   (axis_argmin0, lambda a: (a.shape[1],), None),
                                                   (cumsum_all, lambda a: (a.size,), 1),
                                                   (cumsum_axis1, lambda a: a.shape, lambda a: a.shape[0])])
def test_axis_reductions_and_scans_take_a_line_per_work_item(fn, out_shape, lines):
    a = np.random.default_rng(2).random((5, 7))
    a[2, 3] = a[4, 3] = -1.0  # a tie along axis 0
    want = fn(a)
    out = np.zeros(out_shape(a), dtype=want.dtype)
    mod = Module(lk.jit(fn).inspect_cuda(a))
    k = len(mod.kernels) - 1
    def fill(mod, slots, lay):
        reduce_fill(a)(mod, slots, lay)
        if lay["chunked"]:  # the scan of everything: the elements, chunked over the blocks
            lines_ = a.size
        else:
            lines_ = out.size if lines is None else lines(a) if callable(lines) else lines
        slots[lay["n"]] = lines_
        mod.keep.append(out)
        slots[lay["out"]] = out.ctypes.data
        slots[lay["out"] + 1:lay["out"] + 1 + out.ndim] = out.strides
    _, err = mod.launch(k, fill, grid=2, block=32)
    assert err is None
    np.testing.assert_allclose(out, want, rtol=1e-14)


def grid_of(n, m):
    return lk.imap(lambda i, j: (i * m + j) % 7 - 3.5, (n, m))


def test_an_index_map_unravels_its_work_items_in_c_order():
    out = np.zeros((3, 5))
    mod = Module(lk.jit(grid_of).inspect_cuda(3, 5))
    def fill(mod, slots, lay):
        slots[lay["n"]] = out.size
        slots[lay["dims"]], slots[lay["dims"] + 1] = 3, 5
        slots[lay["out"]] = out.ctypes.data
        slots[lay["out"] + 1:lay["out"] + 3] = out.strides
        mod.keep.append(out)
        for name, v in (("n", 3), ("m", 5)):
            if name in lay["uses"]:
                mod.value(slots, lay["uses"][name], v)
    _, err = mod.launch(0, fill, grid=1, block=32)
    assert err is None
    np.testing.assert_array_equal(out, lk.jit(grid_of)(3, 5))


# ---------------------------------------------------------------- float16
# Stored as 16 bits, computed in float32 and rounded to float16 once per operation (ir.h), with the preamble's own
# conversions (the portable ones here, PTX's cvt on a device): NumPy's bits, and the cpu backend's.

H_EDGE = np.array([0.0, -0.0, 1.0, -1.0, 65504.0, -65504.0, 6e-8, -6e-8, 2.0 ** -14, 2.0 ** -14 - 2.0 ** -24,
                   np.inf, -np.inf, np.nan, 0.5, 1 / 3, 1000.0, 3.0, -2.5], np.float16)


def h_pairs():
    rng = np.random.default_rng(16)
    a, b = np.repeat(H_EDGE, H_EDGE.size), np.tile(H_EDGE, H_EDGE.size)
    return (np.concatenate([a, rng.uniform(-300, 300, 500).astype(np.float16)]),
            np.concatenate([b, rng.uniform(-300, 300, 500).astype(np.float16)]))


def h_add(a, b): return a + b
def h_sub(a, b): return a - b
def h_mul(a, b): return a * b
def h_div(a, b): return a / b
def h_floordiv(a, b): return a // b
def h_mod(a, b): return a % b
def h_minimum(a, b): return np.minimum(a, b)
def h_maximum(a, b): return np.maximum(a, b)
def h_fmin(a, b): return np.fmin(a, b)
def h_fmax(a, b): return np.fmax(a, b)
def h_copysign(a, b): return np.copysign(a, b)
def h_compare(a, b): return a <= b
def h_square(a, b): return a ** 2 - b ** 2.0  # lk_sq: x * x rounded once, as pow
def h_rounded_per_op(a, b): return lk.map(lambda x, y: x * y + x / y - np.sqrt(abs(x)) * np.floor(y), a, b)
def h_mixed(a, b): return lk.map(lambda x, y: x * np.float32(1.0001) + y, a, b)  # float32, from exact values
def h_widen(a, b): return lk.map(lambda x, y: np.float64(x) * 3.0 + y, a, b)   # float64


H_MAPS = [h_add, h_sub, h_mul, h_div, h_floordiv, h_mod, h_minimum, h_maximum, h_fmin, h_fmax, h_copysign, h_compare,
          h_square, h_rounded_per_op, h_mixed, h_widen]


@pytest.mark.parametrize("fn", H_MAPS, ids=lambda f: f.__name__)
def test_float16_maps_give_numpys_bits(fn):
    a, b = h_pairs()
    with np.errstate(all="ignore"):
        want = fn(a, b) if fn not in (h_rounded_per_op, h_mixed, h_widen) else lk.jit(fn, backend="cpu")(a, b)
        if fn is h_rounded_per_op:  # the same operations in NumPy, each rounded by its ufunc
            assert bits_equal(want, a * b + a / b - np.sqrt(np.abs(a)) * np.floor(b))
    mod = Module(lk.jit(fn).inspect_cuda(a, b))
    assert len(mod.kernels) == 1 and len(mod.kernels[0].layout["in"]) == 2
    out = np.zeros(a.size, dtype=want.dtype)
    _, err = mod.launch(0, fill_map([a, b], out), grid=3, block=64)
    assert err is None
    assert bits_equal(out, want), fn.__name__


def h_cast(x): return x.astype(np.float16)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.uint16, np.bool_], ids=lambda d: np.dtype(d).name)
def test_casts_to_float16_round_once_to_nearest_even(dtype):
    """float64 rounds directly (not through float32); ties go to even; 65520 and above overflow to inf."""
    if dtype == np.bool_:
        x = np.array([True, False, True])
    elif np.dtype(dtype).kind == "f":
        special = np.array([2049.0, 2051.0, 65519.0, 65520.0, 1e6, 2.0 ** -25, 1.5 * 2.0 ** -25, 3 * 2.0 ** -26, -0.0,
                            np.inf, -np.inf, np.nan, 1 + 2.0 ** -11 + 2.0 ** -40], np.float64)
        spread = np.random.default_rng(5).standard_normal(3000) * 2.0 ** np.random.default_rng(6).integers(-28, 17, 3000)
        x = np.concatenate([special, -special, spread]).astype(dtype)
    else:
        x = np.concatenate([np.array([0, 1, 2049, 2051, 65519, 65520, 65535]),
                            np.random.default_rng(7).integers(0, 65535, 2000)]).astype(dtype)
    mod = Module(lk.jit(h_cast).inspect_cuda(x))
    out = np.zeros(x.size, dtype=np.float16)
    _, err = mod.launch(0, fill_map([x], out), grid=2, block=64)
    assert err is None
    with np.errstate(over="ignore"):
        assert bits_equal(out, x.astype(np.float16))


def h_axis_max(a): return np.max(a, axis=1)
def h_axis_argmin(a): return np.argmin(a, axis=0)


@pytest.mark.parametrize("fn, out_shape, lines, exact", [(h_axis_max, lambda a: (a.shape[0],), None, True),
                                                         (h_axis_argmin, lambda a: (a.shape[1],), None, True),
                                                         (cumsum_all, lambda a: (a.size,), 1, False),
                                                         (cumsum_axis1, lambda a: a.shape, lambda a: a.shape[0], False)])
def test_float16_axis_reductions_and_scans(fn, out_shape, lines, exact):
    """Extremes exactly; a float16 scan rounds at each step (NumPy's cumsum does too, in its order): within the
    bound of that rounding, k steps of half an ulp of the running sum."""
    a = np.random.default_rng(2).uniform(0, 1, (40, 50)).astype(np.float16)
    a[2, 3] = a[4, 3] = np.float16(-1.0)  # a tie along axis 0
    want = fn(a)
    out = np.zeros(out_shape(a), dtype=want.dtype)
    mod = Module(lk.jit(fn).inspect_cuda(a))
    def fill(mod, slots, lay):
        reduce_fill(a)(mod, slots, lay)
        if lay["chunked"]:  # the scan of everything: the elements, chunked over the blocks
            slots[lay["n"]] = a.size
        else:
            slots[lay["n"]] = out.size if lines is None else lines(a) if callable(lines) else lines
        mod.keep.append(out)
        slots[lay["out"]] = out.ctypes.data
        slots[lay["out"] + 1:lay["out"] + 1 + out.ndim] = out.strides
    _, err = mod.launch(len(mod.kernels) - 1, fill, grid=2, block=32)
    assert err is None and out.dtype == want.dtype
    if exact:
        assert bits_equal(out, want)
        return
    wide = a.astype(np.float64)
    exact_sums = np.cumsum(wide) if fn is cumsum_all else np.cumsum(wide, axis=1)
    steps = np.arange(1, exact_sums.size + 1) if fn is cumsum_all else np.arange(1, a.shape[1] + 1)[None, :]
    bound = steps * 2.0 ** -11 * np.abs(exact_sums)
    assert (np.abs(out.astype(np.float64) - exact_sums) <= bound).all()
    assert (np.abs(want.astype(np.float64) - exact_sums) <= bound).all()  # the bound holds NumPy's own result


def h_prange(a):
    s = np.float16(0.0)
    m = np.float16(-100.0)
    for i in lk.prange(len(a)):
        s += a[i]
        m = max(m, a[i])
    return s, m


def test_float16_prange_reductions_combine_over_blocks():
    a = np.random.default_rng(1).uniform(0, 1, 3000).astype(np.float16)
    mod = Module(lk.jit(h_prange).inspect_cuda(a))
    def fill(mod, slots, lay):
        slots[lay["n"]] = len(a)
        slots[lay["start"]], slots[lay["step"]] = 0, 1
        for name, v in (("a", a), ("s", np.float16(0.0)), ("m", np.float16(-100.0)), ("i", 0)):
            if name in lay["uses"]:
                mod.value(slots, lay["uses"][name], v)
    res, err = mod.launch(0, fill, grid=4, block=64)
    assert err is None
    s, m = np.float16(as_float(res[0])), np.float16(as_float(res[1]))
    assert m == a.max()
    exact = a.astype(np.float64).sum()  # each += rounds to float16, in per-thread and per-block order
    assert abs(float(s) - exact) <= a.size * 2.0 ** -11 * exact
# ---------------------------------------------------------------- the tiled matrix product (cuda_matmul.c)

def matmul(a, b):
    return a @ b


TILE = 128
MATMUL_MODULES = {}


def matmul_module(dtype):
    if dtype not in MATMUL_MODULES:
        x = np.ones((2, 2), dtype=dtype)
        MATMUL_MODULES[dtype] = Module(lk.jit(matmul).inspect_cuda(x, x))
    return MATMUL_MODULES[dtype]


def run_tiled(mod, a, b, grid=None, index=None, out=None):
    """The product kernel over a grid of `grid` blocks (default: one per tile) of 256 threads: C as it left it."""
    m, n = a.shape[0], b.shape[1]
    if out is None:
        out = np.full((m, n), 7, dtype=np.result_type(a, b))  # a stale value where the kernel fails to store
    tiles = -(-m // TILE) * -(-n // TILE)
    k = index if index is not None else next(i for i, kern in enumerate(mod.kernels) if kern.layout["arg"][0] >= 0)
    def fill(mod, slots, lay):
        slots[lay["n"]] = tiles * 256
        for i, x in enumerate((a, b, out)):
            mod.array(slots, lay["arg"][i], x)
    _, err = mod.launch(k, fill, grid=grid or max(tiles, 1), block=256)
    assert err is None
    return out


def operand(rng, shape, dtype, form):
    """An operand of `shape` in a layout: C order, a transposed view, a strided view, reversed rows."""
    def draw(s):
        if np.issubdtype(dtype, np.integer):
            info = np.iinfo(dtype)
            return rng.integers(info.min, info.max, size=s, dtype=dtype, endpoint=True)
        return (rng.random(s) - 0.5).astype(dtype)
    if form == "C":
        return draw(shape)
    if form == "T":
        return draw(shape[::-1]).T
    if form == "strided":
        return draw((2 * shape[0] + 1, 3 * shape[1]))[1::2, ::3]
    return draw(shape)[::-1]


SHAPES = [(1, 1, 1), (1, 5, 1), (3, 1, 4), (5, 7, 3), (65, 17, 1), (1, 20, 70), (70, 33, 130), (64, 64, 64),
          (130, 100, 65), (4, 0, 3)]


@pytest.mark.parametrize("m, k, n", SHAPES, ids=lambda v: str(v))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_tiled_product_is_numpys_for_ragged_and_non_square_shapes(m, k, n, dtype):
    rng = np.random.default_rng(m * 1000 + k * 10 + n)
    a, b = operand(rng, (m, k), dtype, "C"), operand(rng, (k, n), dtype, "C")
    got = run_tiled(matmul_module(dtype), a, b)
    tol = 1e-12 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(got, a @ b, rtol=tol, atol=tol * max(k, 1))


@pytest.mark.parametrize("form_a, form_b", [("T", "C"), ("C", "T"), ("T", "T"), ("strided", "C"), ("C", "strided"),
                                            ("reversed", "T")])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_tiled_product_reads_views_through_their_strides(form_a, form_b, dtype):
    rng = np.random.default_rng(5)
    a, b = operand(rng, (67, 35), dtype, form_a), operand(rng, (35, 70), dtype, form_b)
    got = run_tiled(matmul_module(dtype), a, b)
    tol = 1e-12 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(got, a @ b, rtol=tol, atol=tol * 35)


def placed(x, aligned, transposed=False):
    """x's values in a view whose rows (columns when transposed) start 16-byte aligned (aligned) or not (a base
    4 bytes past an aligned one): the same matrix for the kernel's 16-byte loads and for its element loads."""
    r, c = x.shape[::-1] if transposed else x.shape
    width = -(-c // 4) * 4 + 4
    buf = np.full(r * width + 8, np.nan, dtype=x.dtype)
    start = (-buf.ctypes.data % 16) // x.itemsize + (0 if aligned else 1)
    view = buf[start:start + r * width].reshape(r, width)[:, :c]
    if transposed:
        view = view.T
    view[...] = x
    return view


@pytest.mark.parametrize("a_t, b_t", [(False, False), (False, True), (True, False), (True, True)],
                         ids=["A_rows,B_rows", "A_rows,B_cols", "A_cols,B_rows", "A_cols,B_cols"])
@pytest.mark.parametrize("m, k, n", [(130, 37, 133), (3, 9, 258), (129, 8, 5), (64, 4, 64)], ids=str)
def test_the_16_byte_paths_give_the_element_paths_bits_at_ragged_edges(a_t, b_t, m, k, n):
    """float32 operands and result read and written 16 bytes at a time where their rows (or columns) are aligned,
    element by element at the ragged edges and where they are not: both ways every element of C is the same sum
    in the same order, so the bits must agree, and be NumPy's product."""
    rng = np.random.default_rng(m * k + n)
    a0, b0 = (rng.random((m, k)) - 0.5).astype(np.float32), (rng.random((k, n)) - 0.5).astype(np.float32)
    mod = matmul_module(np.float32)
    fast = run_tiled(mod, placed(a0, True, a_t), placed(b0, True, b_t), out=placed(np.full((m, n), 7, np.float32), True))
    slow = run_tiled(mod, placed(a0, False, a_t), placed(b0, False, b_t), out=placed(np.full((m, n), 7, np.float32), False))
    assert np.array_equal(fast, slow)
    np.testing.assert_allclose(fast, a0 @ b0, rtol=2e-5, atol=2e-5 * k)


def test_a_grid_smaller_than_the_tiles_loops_over_them_with_the_same_result():
    rng = np.random.default_rng(6)
    a, b = rng.random((150, 40)), rng.random((40, 140))
    mod = matmul_module(np.float64)
    one_each = run_tiled(mod, a, b)
    assert np.array_equal(run_tiled(mod, a, b, grid=2), one_each)  # each element sums in k order in one thread
    np.testing.assert_allclose(one_each, a @ b, rtol=1e-12)


def test_the_mnist_distance_product_q_at_p_T():
    rng = np.random.default_rng(7)
    q, p = rng.random((70, 784), dtype=np.float32), rng.random((90, 784), dtype=np.float32)
    got = run_tiled(matmul_module(np.float32), q, p.T)
    np.testing.assert_allclose(got, q @ p.T, rtol=2e-5)


@pytest.mark.parametrize("form_a, form_b", [("C", "C"), ("C", "T"), ("T", "strided"), ("reversed", "C")])
@pytest.mark.parametrize("m, k, n", [(1, 1, 1), (70, 33, 130), (130, 100, 65), (5, 0, 3)], ids=str)
def test_a_float16_product_sums_in_float32_and_rounds_once(form_a, form_b, m, k, n):
    """The kernel that computes a float16 product cuBLAS declined: NumPy's float16 matmul (float32 sums, one
    rounding an element), within 1 ulp of float16 (the order of the sums differs)."""
    rng = np.random.default_rng(m + 3 * k + 7 * n)
    a, b = operand(rng, (m, k), np.float16, form_a), operand(rng, (k, n), np.float16, form_b)
    got, want = run_tiled(matmul_module(np.float16), a, b), a @ b
    assert got.dtype == np.float16
    exact = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_array_less(np.abs(got.astype(np.float64) - want), np.abs(exact) * 2.0 ** -10 + 1e-7)


def run_int_product(a, b, tiled=True, grid=None):
    """An integer or bool product's kernel (an axis reduction over (m, k, n) that holds the tiled product): tiled,
    as the host launches it when the strides are a product's; else a line per element of C."""
    key = (a.dtype, b.dtype)
    if key not in MATMUL_MODULES:  # the kernel reads any strides from its slots: C-order stand-ins type it
        MATMUL_MODULES[key] = Module(lk.jit(matmul).inspect_cuda(np.ones((2, 2), a.dtype), np.ones((2, 2), b.dtype)))
    mod = MATMUL_MODULES[key]
    k = len(mod.kernels) - 1
    lay = mod.kernels[k].layout
    assert lay["product"] >= 0
    m, kk, n = a.shape[0], a.shape[1], b.shape[1]
    out = np.full((m, n), 7, dtype=np.result_type(a, b))
    tiles = -(-m // TILE) * -(-n // TILE)
    def fill(mod, slots, lay):
        slots[lay["n"]] = tiles * 256 if tiled else m * n
        slots[lay["dims"]:lay["dims"] + 3] = (m, kk, n)
        slots[lay["product"]] = int(tiled)
        for i, (x, strides) in enumerate(((a, (a.strides[0], a.strides[1], 0)), (b, (0, b.strides[0], b.strides[1])))):
            mod.keep.append(x)
            slots[lay["in"][i]] = x.ctypes.data
            slots[lay["in"][i] + 1:lay["in"][i] + 4] = strides
        mod.keep.append(out)
        slots[lay["out"]] = out.ctypes.data
        slots[lay["out"] + 1:lay["out"] + 3] = out.strides
    _, err = mod.launch(k, fill, grid=grid or (max(tiles, 1) if tiled else 2), block=256 if tiled else 32)
    assert err is None
    return out


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.int8, np.uint16, np.uint64])
@pytest.mark.parametrize("m, k, n", [(1, 1, 1), (5, 7, 3), (70, 33, 66), (3, 0, 2)], ids=str)
def test_integer_products_are_exact_and_wrap_as_numpys(dtype, m, k, n):
    rng = np.random.default_rng(m + k + n)
    a, b = operand(rng, (m, k), dtype, "C"), operand(rng, (k, n), dtype, "T")  # full-range values: they overflow
    want = a @ b
    assert np.array_equal(run_int_product(a, b), want)
    assert np.array_equal(run_int_product(a, b, tiled=False), want)


def test_mixed_integer_products_widen_each_operand_first():
    rng = np.random.default_rng(9)
    a, b = operand(rng, (20, 70, ), np.int32, "strided"), operand(rng, (70, 9), np.int16, "reversed")
    assert np.array_equal(run_int_product(a, b, grid=1), a @ b)


def test_a_bool_product_is_any_of_the_ands():
    rng = np.random.default_rng(10)
    a, b = rng.random((40, 70)) < 0.03, rng.random((70, 65)) < 0.03
    want = a @ b
    assert want.any() and not want.all()
    assert np.array_equal(run_int_product(a, b), want)
# ---- the chunked scan of everything (cuda_scan.c), and reductions at the same sizes ----

def cumsum_of(a): return np.cumsum(a)
def cumprod_of(a): return np.cumprod(a)
def cumsum_of_squares(a): return np.cumsum(a * a)
def last_nonzero_scan(a): return lk.scan(lambda x, y: y if y != 0 else x, a)  # associative, not commutative
def last_nonzero_scan_init(a): return lk.scan(lambda x, y: y if y != 0 else x, a, 7)
def last_nonzero(a): return lk.reduce(lambda x, y: y if y != 0 else x, a)
def last_nonzero_init(a): return lk.reduce(lambda x, y: y if y != 0 else x, a, 7)

# (n, grid, block): a warp tile is 32 lanes * 8 elements, a block's tile that times its warps; a chunk is whole
# block tiles. One element, more blocks than chunks, a tile less one, a tile, a tile and one, several tiles and a
# ragged end, two warps, and a large run over several blocks.
SIZES = [(1, 4, 32), (255, 2, 32), (256, 1, 32), (257, 3, 32), (3 * 512 + 77, 3, 64), (5000, 7, 64),
         (100_003, 5, 64)]


def float_tolerance(a, dtype):
    """Any order of summation errs by at most (n - 1) * eps * sum(|x|) (Higham's bound): NumPy's sequential cumsum
    and the kernel's grouping each do, so they may differ by twice that, and no more."""
    eps = np.finfo(dtype).eps
    return 2 * max(len(a) - 1, 1) * eps * np.cumsum(np.abs(a.astype(np.float64)))


def scan_launch(mod, a, out, grid, block):
    def fill(mod, slots, lay):
        reduce_fill(a)(mod, slots, lay)
        for at in lay["in"][1:]:  # a map of a with itself (a * a): every input is a
            slots[at] = a.ctypes.data
            slots[at + 1:at + 1 + a.ndim] = a.strides
        mod.keep.append(out)
        slots[lay["out"]] = out.ctypes.data
        slots[lay["out"] + 1] = out.strides[0]
    lay = mod.kernels[-1].layout
    assert lay["chunked"] == 1
    res, err = mod.launch(len(mod.kernels) - 1, fill, grid=grid, block=block)
    return res, err


SCAN_DTYPES = [np.int8, np.int32, np.int64, np.uint8, np.uint64, np.float32, np.float64, np.bool_]


@pytest.mark.parametrize("dtype", SCAN_DTYPES, ids=lambda d: np.dtype(d).name)
def test_a_chunked_cumsum_is_numpy_s_at_every_size(dtype):
    rng = np.random.default_rng(11)
    mod = Module(lk.jit(cumsum_of).inspect_cuda(sample(dtype, 10, rng)))
    for n, grid, block in SIZES:
        a = sample(dtype, n, rng)
        if a.dtype.kind == "f":
            a = np.abs(np.nan_to_num(a))
        want = np.cumsum(a)
        out = np.zeros(n, dtype=want.dtype)
        _, err = scan_launch(mod, a, out, grid, block)
        assert err is None, (n, grid, block, err)
        if want.dtype.kind == "f":
            assert np.all(np.abs(out - want) <= float_tolerance(a, want.dtype)), (n, grid, block)
        else:
            np.testing.assert_array_equal(out, want, err_msg=str((n, grid, block)))


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint64, np.float64], ids=lambda d: np.dtype(d).name)
def test_a_chunked_cumprod_is_numpy_s(dtype):
    rng = np.random.default_rng(12)
    mod = Module(lk.jit(cumprod_of).inspect_cuda(np.ones(4, dtype=dtype)))
    for n, grid, block in SIZES:
        if np.dtype(dtype).kind == "f":
            a = 1 + (rng.random(n) - 0.5) * 1e-3  # products stay near 1: relative errors add up, as in a sum
        else:
            a = rng.integers(1, 4, n).astype(dtype)  # wraps: exact whatever the grouping
        want = np.cumprod(a)
        out = np.zeros(n, dtype=want.dtype)
        _, err = scan_launch(mod, a, out, grid, block)
        assert err is None
        if want.dtype.kind == "f":
            np.testing.assert_allclose(out, want, rtol=4 * n * np.finfo(np.float64).eps)
        else:
            np.testing.assert_array_equal(out, want)


def test_a_chunked_scan_of_a_map_and_of_a_strided_view():
    rng = np.random.default_rng(13)
    base = rng.random((300, 40))
    mod = Module(lk.jit(cumsum_of_squares).inspect_cuda(base[:, ::3]))
    for a in (base[:, ::3], base[:, :13].copy()):
        out = np.zeros(a.size)
        _, err = scan_launch(mod, a, out, 3, 64)
        assert err is None
        want = np.cumsum(a * a)
        assert np.all(np.abs(out - want) <= float_tolerance((a * a).ravel(), np.float64))


@pytest.mark.parametrize("fn", [last_nonzero_scan, last_nonzero_scan_init])
@pytest.mark.parametrize("dtype", [np.int64, np.float64], ids=lambda d: np.dtype(d).name)
def test_a_user_combine_scan_is_split_in_order(fn, dtype):
    """An associative combine that is not commutative: the chunks, warps' parts, tiles and runs must meet in order."""
    rng = np.random.default_rng(14)
    mod = Module(lk.jit(fn).inspect_cuda(np.ones(4, dtype=dtype)))
    for n, grid, block in SIZES:
        a = rng.integers(-2, 3, n).astype(dtype)
        a[rng.random(n) < 0.7] = 0
        want = lk.jit(fn)(a)
        out = np.zeros(n, dtype=want.dtype)
        _, err = scan_launch(mod, a, out, grid, block)
        assert err is None
        np.testing.assert_array_equal(out, want, err_msg=str((n, grid, block)))


@pytest.mark.parametrize("fn", [last_nonzero, last_nonzero_init])
def test_a_user_combine_reduction_runs_over_blocks_in_order(fn):
    rng = np.random.default_rng(15)
    mod = Module(lk.jit(fn).inspect_cuda(np.ones(4, dtype=np.int64)))
    for n, grid, block in SIZES:
        a = rng.integers(-2, 3, n)
        a[rng.random(n) < 0.9] = 0
        res, err = mod.launch(len(mod.kernels) - 1, reduce_fill(a), grid=grid, block=block)
        assert err is None
        assert res[0] == lk.jit(fn)(a), (n, grid, block)


def bad_combine_scan(a): return lk.scan(lambda x, y: x // y, a)


def test_a_combine_that_raises_in_a_chunked_scan_is_an_error_not_a_hang():
    a = np.arange(1, 3000, dtype=np.int64)
    a[1700] = 0
    mod = Module(lk.jit(bad_combine_scan).inspect_cuda(a))
    out = np.zeros(a.size, dtype=np.int64)
    _, err = scan_launch(mod, a, out, 3, 64)
    assert err is not None and ERR_CLASS[err[1]] is ZeroDivisionError


# nanmax only over floats: of integers it is max, already in the table
SIZED_REDUCTIONS = [(fn, dt) for fn in (r_sum, r_prod, r_argmin, r_max, r_nanmax)
                    for dt in (np.int8, np.uint64, np.float32, np.float64) if fn is not r_nanmax or np.dtype(dt).kind == "f"]


@pytest.mark.parametrize("fn,dtype", SIZED_REDUCTIONS, ids=[f"{f.__name__}-{np.dtype(d).name}" for f, d in SIZED_REDUCTIONS])
def test_a_reduction_at_the_scan_sizes_is_numpy_s(fn, dtype):
    """The wide loads of the flat path (16 bytes, aligned), the scalar rest and the unaligned input."""
    rng = np.random.default_rng(16)
    mod = Module(lk.jit(fn).inspect_cuda(sample(dtype, 10, rng)))
    for n, grid, block in SIZES:
        buf = sample(dtype, n + 1, rng)
        for a in (buf[:n], buf[1:]):  # aligned, and one element past (no wide loads)
            if fn is r_prod and a.dtype.kind == "f":
                a = (1 + (a - 0.5) * 1e-3).astype(dtype)
            want = fn(a)
            res, err = mod.launch(len(mod.kernels) - 1, reduce_fill(a), grid=grid, block=block)
            assert err is None
            if fn is r_argmin:
                assert res[0] == want
            elif np.asarray(want).dtype.kind == "f":
                got = as_float(res[0])
                tol = 2 * n * np.finfo(dtype).eps * (np.sum(np.abs(np.nan_to_num(a.astype(np.float64)))) if fn is r_sum else abs(want))
                assert (math.isnan(got) and math.isnan(want)) or abs(got - want) <= tol, (n, grid, block, got, want)
            else:
                assert np.array(res[0]).astype(np.asarray(want).dtype) == want, (n, grid, block)
