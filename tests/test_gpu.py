"""The gpu backend as a user meets it: the seeds' code under lk.jit(backend="gpu") gives NumPy's results, errors
raised inside kernels are the cpu backend's exceptions with the source line, NumPy arguments move to the device
once and back once, and where no GPU can be used a gpu call says why. Tests that need a device skip with the
reason when none is found (the backend-agnostic suite reruns on gpu too: `LORIKEET_BACKEND=gpu`)."""
import numpy as np
import pytest

import lorikeet as lk
from benchmarks.workloads import conv, fused, matmult, pairwise, regression, summation

_ok = lk._lorikeet.backend_available("gpu")
GPU = _ok is True
REASON = None if GPU else _ok[1]
needs_gpu = pytest.mark.skipif(not GPU, reason=f"no usable GPU: {REASON}")


def gpu(fn):
    return lk.jit(fn, backend="gpu")


def test_without_a_gpu_a_gpu_call_says_why():
    if GPU:
        pytest.skip("this machine has a usable GPU")
    f = gpu(fused.fused_expr)
    a = np.ones(10)
    with pytest.raises(lk.BackendUnavailable) as e:
        f(a, a, a)
    msg = str(e.value)
    assert "gpu backend cannot run here" in msg
    # one of the reasons rt_gpu_unavailable gives, naming what is missing
    assert any(w in msg for w in ("driver", "device", "NVRTC", "fork", "lost")), msg


def test_cpu_and_openmp_still_run_where_gpu_cannot():
    f = lk.jit(fused.fused_expr, backend="cpu")
    a = np.linspace(0, 1, 100)
    np.testing.assert_allclose(f(a, a, a), fused.fused_numpy(a, a, a))


# ---- on a device ----

def mnist_distance(q, p):
    """The CuPy notebook's distance function, as written there."""
    return np.sqrt(np.einsum('ij,ij->i', q, q)[:, np.newaxis] - 2 * q @ p.T + np.einsum('ij,ij->i', p, p))


def _mnist_inputs(dtype):
    rng = np.random.default_rng(784)
    return rng.random((50, 784)).astype(dtype), rng.random((40, 784)).astype(dtype)


# name, kernel, reference, inputs, rtol, atol (the benchmark workload's where it has one)
SEEDS = [
    ("fused", fused.fused_expr, fused.fused_numpy, lambda: fused.make_inputs(100_001), 1e-12, 0),
    ("sum", summation.sum_array, summation.sum_numpy, lambda: summation.make_inputs(1_000_003), 1e-9, 0),
    ("regression", regression.fit_simple_regression, regression.regression_numpy, lambda: regression.make_inputs(100_000), 1e-8, 0),
    ("conv_3x3_trim", conv.conv_3x3_trim, conv.conv_numpy, lambda: conv.make_inputs(64), 1e-12, 0),
    ("matmult_comprehension", matmult.matmult_comprehension, matmult.matmult_numpy, lambda: matmult.make_inputs((40, 30, 50)), 1e-3, 1e-3),
    ("pairwise", pairwise.pairwise_dist, pairwise.pairwise_numpy, lambda: pairwise.make_inputs(60), pairwise.WORKLOAD.rtol, pairwise.WORKLOAD.atol),
    # off the diagonal: on it the squared distance is 0 up to rounding, and its square root any small number
    ("mnist_float64", mnist_distance, mnist_distance, lambda: _mnist_inputs(np.float64), 1e-9, 1e-6),
    ("mnist_float32", mnist_distance, mnist_distance, lambda: _mnist_inputs(np.float32), 1e-4, 1e-3),
]


@needs_gpu
@pytest.mark.parametrize("name,kernel,reference,inputs,rtol,atol", SEEDS, ids=[s[0] for s in SEEDS])
def test_seed_workloads_match_numpy(name, kernel, reference, inputs, rtol, atol):
    args = inputs()
    got = gpu(kernel)(*args)
    want = reference(*args)
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def now_faster(x):
    return np.mean(x < 0)


def axis_sums(m):
    return m.sum(axis=0), m.sum(axis=1), m.max(axis=1), np.argmax(m, axis=0)


def running(a):
    return np.cumsum(a), np.cumprod(a[:20])


def big_scans(a, b, c):
    return np.cumsum(a), np.cumsum(b), np.cumprod(1.0 + c * 1e-7), lk.scan(lambda x, y: y if y != 0 else x, b)


def user_reduce(b):
    return lk.reduce(lambda x, y: y if y != 0 else x, b)


def sums_everywhere(a, f):
    return np.sum(a), np.sum(f), np.sum(a[1:]), np.prod(1.0 + a * 1e-8), np.argmax(a), np.nanmax(f), np.mean(a)


def arg_extremes(a):
    return np.argmin(a), np.argmax(a), np.min(a), np.max(a)


def prange_sum_of_squares(a):
    s = 0.0
    for i in lk.prange(a.shape[0]):
        s += a[i] * a[i]
    return s


def indexed(n):
    return lk.imap(lambda i, j: i * 10 + j, (n, n + 1))


def loop_around_maps(a, steps):
    for _ in range(steps):
        a = a * 0.5 + 1.0
    return a


def scalar_element_on_host(a):
    b = a + 1.0
    return b[3] + b[-1]


def in_place(a):
    a[1:] = a[:-1] * 2.0
    return a


CASES = [
    (now_faster, lambda: (np.linspace(-1, 1, 10_001),)),
    (axis_sums, lambda: (np.arange(12.0 * 7).reshape(12, 7) % 5,)),
    (running, lambda: (np.linspace(0.5, 1.5, 1000),)),
    (arg_extremes, lambda: (np.cos(np.arange(5000.0)),)),
    (prange_sum_of_squares, lambda: (np.arange(10_000.0),)),
    (indexed, lambda: (17,)),
    (loop_around_maps, lambda: (np.arange(100.0), 5)),
    (scalar_element_on_host, lambda: (np.arange(10.0),)),
]


def _same(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)
    assert np.asarray(got).dtype == np.asarray(want).dtype


@needs_gpu
@pytest.mark.parametrize("fn,inputs", CASES, ids=[c[0].__name__ for c in CASES])
def test_parallel_nodes_match_cpython(fn, inputs):
    args = inputs()
    _same(gpu(fn)(*args), fn(*args))


def _scan_inputs(n):
    rng = np.random.default_rng(5)
    b = rng.integers(-3, 4, n)
    b[rng.random(n) < 0.5] = 0
    return rng.random(n), b, rng.random(n)


@needs_gpu
@pytest.mark.parametrize("n", [1, 2047, 2048, 2049, 1_000_003, 10_000_000])
def test_whole_array_scans_over_many_blocks_match_numpy(n):
    """The chunked scan: integers exact; float sums within twice Higham's bound of any summation order, (n - 1) *
    eps * sum(|x|), of NumPy's sequential cumsum; the same bits on every run."""
    a, b, c = _scan_inputs(n)
    f = gpu(big_scans)
    got = f(a, b, c)
    want = big_scans(a, b, c)
    bound = 2 * max(n - 1, 1) * np.finfo(np.float64).eps * np.cumsum(np.abs(a))
    assert np.all(np.abs(got[0] - want[0]) <= bound)
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_allclose(got[2], want[2], rtol=4 * n * np.finfo(np.float64).eps)
    np.testing.assert_array_equal(got[3], want[3])
    again = f(a, b, c)
    for g, h in zip(got, again):
        assert g.tobytes() == h.tobytes()


@needs_gpu
@pytest.mark.parametrize("n", [1, 4095, 4097, 1_000_003, 10_000_000])
def test_whole_array_reductions_match_numpy_and_repeat_bit_for_bit(n):
    a, b, _ = _scan_inputs(n)
    f32 = a.astype(np.float32)
    f = gpu(sums_everywhere)
    got, want = f(a, f32), sums_everywhere(a, f32)
    eps64, eps32 = np.finfo(np.float64).eps, np.finfo(np.float32).eps
    assert abs(got[0] - want[0]) <= 2 * n * eps64 * np.sum(a)
    assert abs(got[1] - want[1]) <= 2 * n * eps32 * np.sum(a)
    assert abs(got[2] - want[2]) <= 2 * n * eps64 * np.sum(a)
    assert got[3] == pytest.approx(want[3], rel=4 * n * eps64)
    assert got[4] == want[4] and got[5] == want[5]
    assert got[6] == pytest.approx(want[6], rel=2 * n * eps64)
    assert gpu(user_reduce)(b) == user_reduce(b)
    again = f(a, f32)
    assert all(np.asarray(x).tobytes() == np.asarray(y).tobytes() for x, y in zip(got, again))


@needs_gpu
def test_writes_to_a_numpy_argument_come_back():
    a = np.arange(10.0)
    want = in_place(a.copy())
    got = gpu(in_place)(a)
    np.testing.assert_array_equal(a, want)
    np.testing.assert_array_equal(got, want)


def out_of_bounds(a, k):
    return lk.map(lambda x: a[int(x) + k], a)


def divide(a, d):
    return lk.map(lambda x: x // d, a)


@needs_gpu
def test_errors_in_kernels_are_the_cpu_backends_exceptions():
    a = np.arange(8.0)
    f = gpu(out_of_bounds)
    with pytest.raises(IndexError) as e:
        f(a, 5)
    cpu = lk.jit(out_of_bounds, backend="cpu")
    with pytest.raises(IndexError) as c:
        cpu(a, 5)
    assert str(e.value) == str(c.value)  # the lowest failing element's error, with the source line
    # the context is usable after the error
    np.testing.assert_array_equal(f(a, 0), a)
    with pytest.raises(ZeroDivisionError):
        gpu(divide)(np.arange(5), 0)


@needs_gpu
def test_numpy_arguments_move_once_each_way():
    a, b, c = fused.make_inputs(4096)
    f = gpu(fused.fused_expr)
    f(a, b, c)
    s0 = lk.runtime.stats()
    f(a, b, c)
    s1 = lk.runtime.stats()
    assert s1["h2d_copies"] - s0["h2d_copies"] == 3
    assert s1["h2d_bytes"] - s0["h2d_bytes"] == 3 * a.nbytes
    assert s1["d2h_copies"] - s0["d2h_copies"] == 1
    assert s1["d2h_bytes"] - s0["d2h_bytes"] == a.nbytes
    assert s1["device_live_bytes"] == s0["device_live_bytes"]


def step(a, b):
    return a * 2.0 + b


def total(a):
    return np.sum(a)


@needs_gpu
def test_a_pipeline_on_device_arrays_copies_nothing():
    x = np.linspace(0, 1, 10_000)
    f, g = gpu(step), gpu(total)
    dx = lk.to_device(x)
    f(f(dx, dx), dx)  # compiled before counting
    g(dx)
    s0 = lk.runtime.stats()
    y = f(dx, dx)
    z = f(y, dx)
    t = g(z)
    s1 = lk.runtime.stats()
    assert isinstance(y, lk.DeviceArray) and isinstance(z, lk.DeviceArray)
    assert s1["h2d_copies"] == s0["h2d_copies"]
    # the reduction's scalar comes back (8 bytes); no array moves
    assert s1["d2h_bytes"] - s0["d2h_bytes"] <= 8 * (s1["d2h_copies"] - s0["d2h_copies"])
    want = step(step(x, x), x)
    np.testing.assert_allclose(z.copy_to_host(), want, rtol=1e-15)
    assert t == pytest.approx(want.sum(), rel=1e-12)
    del y, z
    import gc
    gc.collect()
    assert lk.runtime.stats()["device_live_bytes"] <= s0["device_live_bytes"]


@needs_gpu
def test_views_of_device_arguments_stay_views():
    def tail(a):
        return a[1:]
    d = lk.to_device(np.arange(10.0))
    v = gpu(tail)(d)
    assert isinstance(v, lk.DeviceArray)
    assert v.__cuda_array_interface__["data"][0] == d.__cuda_array_interface__["data"][0] + 8
    np.testing.assert_array_equal(v.copy_to_host(), np.arange(1.0, 10.0))


@needs_gpu
def test_cupy_arrays_are_taken_without_a_copy():
    cupy = pytest.importorskip("cupy")
    c = cupy.arange(1000, dtype=cupy.float64)
    s0 = lk.runtime.stats()
    r = gpu(step)(c, c)
    s1 = lk.runtime.stats()
    assert s1["h2d_copies"] == s0["h2d_copies"]
    back = cupy.asarray(r)  # through __cuda_array_interface__: no copy
    assert back.data.ptr == r.__cuda_array_interface__["data"][0]
    np.testing.assert_allclose(cupy.asnumpy(back), step(np.arange(1000.0), np.arange(1000.0)))


@needs_gpu
def test_device_arrays_are_refused_by_the_cpu_backend():
    d = lk.to_device(np.ones(4))
    with pytest.raises(TypeError, match="device array"):
        lk.jit(step, backend="cpu")(d, d)


def write_through_a_view(a):
    b = a[::2]
    b[0] = -1.0
    return a.sum()


@needs_gpu
def test_writes_through_a_view_of_an_argument_come_back():
    a = np.arange(6.0)
    want_a = a.copy()
    want = write_through_a_view(want_a)
    assert gpu(write_through_a_view)(a) == want
    np.testing.assert_array_equal(a, want_a)


@needs_gpu
def test_a_function_without_parallel_operations_runs_on_device_arrays():
    def tail(a):
        t = 0.0
        for i in range(3):
            t += a[i]
        return t
    d = lk.to_device(np.arange(10.0))
    assert gpu(tail)(d) == 3.0
    assert gpu(tail)(np.arange(10.0)) == 3.0  # NumPy arrays: the cpu backend's code on host memory
