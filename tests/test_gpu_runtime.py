"""The gpu runtime (runtime/gpu_*.c, runtime/nvrtc.c) and lk.DeviceArray (pyshim/device_*.c).

What needs no GPU runs everywhere: the refusal where there is no driver or device, counters that read without
initialising CUDA, NVRTC (which compiles on any machine). What needs a GPU is skipped, with the reason, where
lk.gpu_available() says there is none; scripts/gpu_smoke.py runs the same checks on the GPU host."""
import gc
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

import lorikeet as lk
from helpers import OnlyDLPack
from lorikeet import _lorikeet

GPU_OK, GPU_WHY = lk.gpu_available()
needs_gpu = pytest.mark.skipif(not GPU_OK, reason=f"no usable GPU: {GPU_WHY}")
NVRTC_WHY = None
try:
    _lorikeet._nvrtc_compile('extern "C" __global__ void k() {}', 90)
except lk.BackendUnavailable as e:
    NVRTC_WHY = str(e)
needs_nvrtc = pytest.mark.skipif(NVRTC_WHY is not None, reason=f"no NVRTC: {NVRTC_WHY}")

GPU_KEYS = ("h2d_copies", "h2d_bytes", "d2h_copies", "d2h_bytes", "d2d_copies", "device_allocations",
            "device_frees", "device_live_bytes", "launches", "compiles", "cublas_calls")

KERNEL = r"""
extern "C" __global__ void scale(double *x, long long n)
{
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        x[i] *= 2.0;
}
"""


# ---- without a GPU ----

def test_stats_have_the_gpu_counters_at_zero_without_initialising_cuda():
    # a fresh process: reading the counters must not load the driver (no cuInit at import or in stats())
    code = ("import lorikeet as lk, sys; s = lk.runtime.stats(); "
            "print(all(s[k] == 0 for k in %r)); "
            "print(any('libcuda' in l for l in open('/proc/self/maps')))" % (GPU_KEYS,))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(lk.__file__))))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "False"]


@pytest.mark.skipif(GPU_OK, reason="a GPU is usable here")
def test_without_a_gpu_to_device_says_why():
    assert GPU_WHY  # one sentence naming the case
    with pytest.raises(lk.BackendUnavailable) as e:
        lk.to_device(np.arange(4.0))
    assert str(e.value) == GPU_WHY
    if "libcuda" in GPU_WHY:  # the machine without a driver at all (CI)
        assert GPU_WHY.startswith("no CUDA driver: libcuda.so.1 was not found")
    assert lk.runtime.stats()["h2d_copies"] == 0


@pytest.mark.skipif(GPU_OK, reason="a GPU is usable here")
def test_without_a_gpu_the_selftest_refuses_the_same_way():
    with pytest.raises(lk.BackendUnavailable, match="CUDA|NVRTC|fork|device"):
        _lorikeet._gpu_selftest(np.arange(4.0))


def test_the_pinned_staging_is_described_without_initialising_cuda():
    code = ("import lorikeet as lk; i = lk._lorikeet._gpu_staging_info(); "
            "print(i['chunk_bytes'], i['min_bytes'], i['cap_bytes'], i['pinned_bytes']); "
            "print(any('libcuda' in l for l in open('/proc/self/maps')))")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(lk.__file__)))
    env.pop("LORIKEET_GPU_PINNED_MB", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    chunk, least, cap, held = map(int, out.stdout.split()[:4])
    assert out.stdout.split()[4] == "False"
    assert 0 < least <= chunk <= cap == 64 << 20 and held == 0
    env["LORIKEET_GPU_PINNED_MB"] = "16"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert int(out.stdout.split()[2]) == 16 << 20


def test_gpu_available_is_a_pair():
    ok, why = lk.gpu_available()
    assert isinstance(ok, bool)
    assert (why is None) == ok
    if not ok:
        assert isinstance(why, str) and len(why) > 20


@needs_nvrtc
def test_nvrtc_makes_a_cubin_for_the_architectures_it_knows():
    before = lk.runtime.stats()["compiles"]
    image, is_ptx = _lorikeet._nvrtc_compile(KERNEL, 90)
    assert not is_ptx and image[:4] == b"\x7fELF"
    image80, is_ptx80 = _lorikeet._nvrtc_compile(KERNEL, 80)
    assert image80[:4] == b"\x7fELF" if not is_ptx80 else b".target" in image80
    assert lk.runtime.stats()["compiles"] == before + 2


@needs_nvrtc
def test_nvrtc_makes_ptx_for_an_architecture_newer_than_it_knows():
    # 9.9 is no real device: NVRTC knows no sm_99, so the newest architecture it knows below it, as PTX
    image, is_ptx = _lorikeet._nvrtc_compile(KERNEL, 99)
    assert is_ptx
    text = image.decode()
    assert ".visible .entry scale" in text and ".target sm_" in text


@needs_nvrtc
def test_nvrtc_refuses_an_architecture_older_than_it_knows():
    with pytest.raises(lk.BackendUnavailable, match="cannot compile for compute capability 3.0"):
        _lorikeet._nvrtc_compile(KERNEL, 30)


@needs_nvrtc
def test_a_syntax_error_is_an_internal_error_with_nvrtcs_log():
    bad = KERNEL.replace("x[i] *= 2.0;", "x[i] *= 2.0")
    with pytest.raises(lk.InternalError) as e:
        _lorikeet._nvrtc_compile(bad, 90, "bad_kernel.cu")
    msg = str(e.value)
    assert "bad_kernel.cu" in msg and 'expected a ";"' in msg and "error" in msg


@needs_nvrtc
def test_nvrtc_uses_no_fast_math_unless_asked():
    src = 'extern "C" __global__ void d(float *x) { x[0] = x[0] / x[1]; }'
    exact, _ = _lorikeet._nvrtc_compile(src, 80, "d.cu", False)
    fast, _ = _lorikeet._nvrtc_compile(src, 80, "d.cu", True)
    assert exact != fast  # IEEE division against the approximate one


def cublas_status(**env):
    """_cublas_status() in a fresh process (the library is looked for once per process) with env set."""
    code = "from lorikeet import _lorikeet; print(repr(_lorikeet._cublas_status()))"
    r = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, **env), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr  # never a crash, whatever is found
    return eval(r.stdout)


def test_the_cublas_loader_reports_a_missing_library_by_name():
    version, why = cublas_status(LORIKEET_CUBLAS="/nonexistent/libcublas.so.13")
    assert version == 0
    assert "cuBLAS (libcublas.so.13, .12 or .11) was not found" in why and "/nonexistent" in why


def test_the_cublas_loader_refuses_a_library_that_is_not_cublas():
    libc = next(p for p in ("/lib/x86_64-linux-gnu/libc.so.6", "/lib64/libc.so.6", "/usr/lib/libc.so.6")
                if os.path.exists(p)) if sys.platform.startswith("linux") else None
    if libc is None:
        pytest.skip("no libc.so.6 to stand in for a wrong library")
    version, why = cublas_status(LORIKEET_CUBLAS=libc)
    assert version == 0 and why == f"{libc} lacks cublasGetProperty: cuBLAS 11 or newer is needed"


def cublas_dirs():
    return [d for d in (os.environ.get("CUDA_PATH", "") + "/lib64", "/usr/local/cuda/lib64")
            if os.path.exists(os.path.join(d, "libcublas.so.13")) or os.path.exists(os.path.join(d, "libcublas.so.12"))]


@pytest.mark.skipif(not cublas_dirs(), reason="no libcublas in CUDA_PATH/lib64 or /usr/local/cuda/lib64")
def test_the_cublas_loader_finds_the_toolkits_library_without_a_driver():
    """Loading cuBLAS and reading its version needs no GPU; the handle waits for the first product."""
    version, path = cublas_status(LORIKEET_CUBLAS=cublas_dirs()[0])
    assert version >= 110000, path
    assert path.startswith(cublas_dirs()[0]) and "libcublas.so.1" in path


def test_counting_cublas_calls_never_loads_cublas_or_cuda():
    code = ("import lorikeet as lk; s = lk.runtime.stats(); "
            "print(s['cublas_calls'], any('libcublas' in l or 'libcuda.' in l for l in open('/proc/self/maps')))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert r.stdout.split() == ["0", "False"]
@needs_nvrtc
def test_the_same_kernels_compile_once_in_a_process():
    import time

    def first(x):
        return np.sqrt(x * x + 1.25)

    def second(y):  # another function, at another line: its kernel is the same code

        return np.sqrt(y * y + 1.25)

    a = np.arange(8.0)
    s1, s2 = lk.jit(first).inspect_cuda(a), lk.jit(second).inspect_cuda(a)
    assert s1 != s2  # they differ in the comments naming their functions and lines
    c0 = lk.runtime.stats()["compiles"]
    t0 = time.perf_counter()
    image1, _ = _lorikeet._nvrtc_compile(s1, 90)
    t1 = time.perf_counter()
    image2, _ = _lorikeet._nvrtc_compile(s2, 90)
    t2 = time.perf_counter()
    assert image1 == image2 and image1[:4] == b"\x7fELF"
    assert lk.runtime.stats()["compiles"] == c0 + 1
    assert t2 - t1 < (t1 - t0) / 10  # no NVRTC run the second time
    # another architecture, fastmath, or a different kernel: compiled
    _lorikeet._nvrtc_compile(s2, 80)
    _lorikeet._nvrtc_compile(s2, 90, "k.cu", True)
    _lorikeet._nvrtc_compile(lk.jit(lambda x: np.sqrt(x * x + 1.5)).inspect_cuda(a), 90)
    assert lk.runtime.stats()["compiles"] == c0 + 4


# ---- with a GPU ----

DTYPES = [np.float64, np.float32, np.float16, np.int64, np.int32, np.int8, np.uint16, np.bool_, np.complex128]


def _sample(dtype, shape):
    n = int(np.prod(shape))
    return (np.arange(n) % 7 - 3).astype(dtype).reshape(shape) if dtype != np.bool_ else \
        (np.arange(n) % 3 == 0).reshape(shape)


@needs_gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(0,), (1,), (1000,), (3, 5), (2, 3, 4), ()])
def test_round_trip(dtype, shape):
    x = _sample(dtype, shape)
    d = lk.to_device(x)
    assert d.shape == x.shape and d.dtype == x.dtype and d.ndim == x.ndim and d.size == x.size
    assert d.nbytes == x.nbytes
    if x.size:  # an empty array's strides are NumPy's choice
        assert d.strides == x.strides
    back = d.copy_to_host()
    assert back.dtype == x.dtype and back.shape == x.shape
    np.testing.assert_array_equal(back, x)
    np.testing.assert_array_equal(np.asarray(d), x)
    if x.ndim:
        assert len(d) == x.shape[0]
    else:
        with pytest.raises(TypeError):
            len(d)


@needs_gpu
def test_non_contiguous_and_foreign_inputs_arrive_c_contiguous():
    base = np.arange(60.0).reshape(6, 10)
    for x in (base[::2, 1::3], base.T, base[:, ::-1], np.asfortranarray(base), base.astype(">f8"), [[1, 2], [3, 4]]):
        d = lk.to_device(x)
        want = np.asarray(x)
        assert d.strides == np.ascontiguousarray(want).strides
        np.testing.assert_array_equal(d.copy_to_host(), want)


@needs_gpu
def test_unsupported_dtypes_are_refused():
    with pytest.raises(TypeError, match="to_device"):
        lk.to_device(np.array(["a", "b"]))
    with pytest.raises(TypeError, match="to_device"):
        lk.to_device(np.array([object()]))


@needs_gpu
def test_repr_and_array_protocol():
    d = lk.to_device(np.zeros((2, 3), np.float32))
    assert repr(d) == "lorikeet.DeviceArray(shape=(2, 3), dtype=dtype('float32'))"
    assert np.asarray(d, dtype=np.float64).dtype == np.float64
    with pytest.raises(ValueError):
        np.asarray(d, copy=False)
    assert lk.to_device(d) is d


@needs_gpu
def test_cuda_array_interface_v3():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    d = lk.to_device(x)
    cai = d.__cuda_array_interface__
    assert cai["version"] == 3
    assert cai["shape"] == (3, 4) and cai["typestr"] == "<i4" and cai["strides"] is None
    ptr, readonly = cai["data"]
    assert ptr == d.ptr and ptr != 0 and readonly is False
    assert cai["stream"] is None  # to_device's copy is done: nothing to wait for
    assert d.__dlpack_device__() == (2, 0)


@needs_gpu
def test_stats_count_one_copy_each_way():
    x = np.random.default_rng(0).random(1 << 16)
    s0 = lk.runtime.stats()
    d = lk.to_device(x)
    s1 = lk.runtime.stats()
    assert s1["h2d_copies"] - s0["h2d_copies"] == 1 and s1["h2d_bytes"] - s0["h2d_bytes"] == x.nbytes
    assert s1["device_allocations"] - s0["device_allocations"] == 1
    assert s1["device_live_bytes"] - s0["device_live_bytes"] == x.nbytes
    d.copy_to_host()
    np.asarray(d)
    s2 = lk.runtime.stats()
    assert s2["d2h_copies"] - s1["d2h_copies"] == 2 and s2["d2h_bytes"] - s1["d2h_bytes"] == 2 * x.nbytes
    assert s2["h2d_copies"] == s1["h2d_copies"]
    del d
    gc.collect()
    s3 = lk.runtime.stats()
    assert s3["device_frees"] - s2["device_frees"] == 1
    assert s3["device_live_bytes"] == s0["device_live_bytes"]


@needs_gpu
def test_the_selftest_kernels_compute_and_report():
    x = np.arange(1000.0)
    s0 = lk.runtime.stats()
    y, (total, count), err, last = _lorikeet._gpu_selftest(x)
    s1 = lk.runtime.stats()
    assert err is None
    want = 2 * x + 1
    assert last == want[-1]  # rt_gpu_read_elem
    want[0] = -last  # rt_gpu_write_elem
    np.testing.assert_array_equal(y, want)
    assert total == int(x.sum()) and count == x.size
    assert s1["launches"] - s0["launches"] == 2
    # the call's two device buffers were freed with its context
    assert s1["device_frees"] - s0["device_frees"] == 2
    assert s1["device_live_bytes"] == s0["device_live_bytes"]


@needs_gpu
@pytest.mark.parametrize("n", [1000, 3_000_000])
def test_the_lowest_failing_index_is_the_error(n):
    x = np.arange(float(n))
    bad = [n - 1, n // 2, n // 3 + 1, 700]
    x[bad] = -1.0
    y, (total, count), err, *_ = _lorikeet._gpu_selftest(x, 42)
    name, message, extra, line = err
    assert name == "IndexError" and line == 42
    assert extra == [min(bad), n, 0]
    assert message == f"index {min(bad)} is out of bounds for axis 0 with size {n}"
    assert count == n  # the reduce kernel ran all the same
    # the record was reset when it was reported: the next launch is clean
    y, _, err, *_ = _lorikeet._gpu_selftest(np.arange(10.0))
    assert err is None and y[9] == 19.0


@needs_gpu
def test_an_empty_launch():
    s0 = lk.runtime.stats()
    y, (total, count), err, *_ = _lorikeet._gpu_selftest(np.zeros(0))
    assert err is None and y.size == 0 and total == 0 and count == 0
    # RT_LAUNCH_ELEMENTS with n == 0 launches nothing; RT_LAUNCH_REDUCE launches one block
    assert lk.runtime.stats()["launches"] - s0["launches"] == 1


@needs_gpu
def test_an_impossible_allocation_is_a_memory_error_and_the_device_stays_usable():
    s0 = lk.runtime.stats()
    with pytest.raises(MemoryError, match=r"cannot allocate 1125899906842624 bytes .* on the GPU: the memory pool "
                                          r"holds .*, the device .* has .* free of"):
        _lorikeet._device_empty(1 << 50)
    d = lk.to_device(np.arange(5))
    np.testing.assert_array_equal(d.copy_to_host(), np.arange(5))
    assert lk.gpu_available() == (True, None)
    assert lk.runtime.stats()["device_live_bytes"] >= s0["device_live_bytes"]


@needs_gpu
def test_a_call_buffer_becomes_a_device_array_that_frees_it():
    s0 = lk.runtime.stats()
    d = _lorikeet._device_empty(1 << 20)
    assert d.shape == (1 << 20,) and d.dtype == np.uint8
    assert lk.runtime.stats()["device_live_bytes"] - s0["device_live_bytes"] == 1 << 20
    view = _lorikeet._device_view(d)
    assert view[0] == d.ptr and view[2] == (1 << 20,) and view[3] == (1,) and view[6] is d
    del d, view
    gc.collect()
    s1 = lk.runtime.stats()
    assert s1["device_live_bytes"] == s0["device_live_bytes"]
    assert s1["device_frees"] - s0["device_frees"] == 1


def test_numpy_arrays_are_not_device_arrays():
    assert _lorikeet._device_view(np.arange(3)) is None
    assert _lorikeet._device_view(3.0) is None


def _have(mod):
    return importlib.util.find_spec(mod) is not None


@needs_gpu
@pytest.mark.skipif(not _have("cupy"), reason="cupy is not installed")
def test_cupy_takes_a_device_array_without_a_copy():
    import cupy

    x = np.arange(24.0).reshape(4, 6)
    d = lk.to_device(x)
    c = cupy.asarray(d)
    assert c.data.ptr == d.ptr
    # and back: a CuPy array seen by lorikeet's call path, without a copy
    seen = _lorikeet._device_view(c[:, ::2])
    assert seen[0] == d.ptr and seen[1] == np.float64 and seen[2] == (4, 3) and seen[3] == (48, 16)
    np.testing.assert_array_equal(cupy.asnumpy(c), x)
    c2 = cupy.from_dlpack(d)
    assert c2.data.ptr == d.ptr
    np.testing.assert_array_equal(cupy.asnumpy(c2 * 2), 2 * x)


@needs_gpu
@pytest.mark.skipif(not _have("torch"), reason="torch is not installed")
def test_torch_takes_a_device_array_through_dlpack():
    import torch

    x = np.arange(10, dtype=np.float32)
    d = lk.to_device(x)
    t = torch.from_dlpack(d)
    assert t.data_ptr() == d.ptr and t.device.type == "cuda"
    np.testing.assert_array_equal(t.cpu().numpy(), x)
    # and back, through __cuda_array_interface__ or DLPack: the same memory
    seen = _lorikeet._device_view(t[2:])
    assert seen[0] == d.ptr + 8 and seen[2] == (8,) and seen[3] == (4,)


@needs_gpu
def test_dlpack_capsules_legacy_and_versioned():
    d = lk.to_device(np.arange(6.0).reshape(2, 3))
    assert '"dltensor"' in repr(d.__dlpack__())
    assert '"dltensor_versioned"' in repr(d.__dlpack__(max_version=(1, 0)))
    assert '"dltensor"' in repr(d.__dlpack__(stream=-1, max_version=(0, 8)))
    with pytest.raises(BufferError):
        d.__dlpack__(copy=True)
    with pytest.raises(BufferError):
        d.__dlpack__(dl_device=(1, 0))
    # capsules nobody consumed give the array back when they die
    s0 = lk.runtime.stats()
    del d
    gc.collect()
    assert lk.runtime.stats()["device_frees"] - s0["device_frees"] == 1


@needs_gpu
def test_a_device_array_comes_back_through_dlpack_alone():
    x = np.arange(24.0).reshape(4, 6)
    d = lk.to_device(x)
    seen = _lorikeet._device_view(OnlyDLPack(d))
    assert seen[0] == d.ptr and seen[1] == np.float64 and seen[2] == (4, 6) and seen[3] == (48, 8)
    assert "dlpack_owner" in repr(seen[6])  # the managed tensor, deleted when the view is done with it
    s0 = lk.runtime.stats()
    del d, seen
    gc.collect()
    assert lk.runtime.stats()["device_frees"] - s0["device_frees"] == 1


@needs_gpu
@pytest.mark.skipif(not _have("torch"), reason="torch is not installed")
def test_a_torch_tensor_through_dlpack_alone():
    import torch

    t = torch.arange(12, dtype=torch.int32, device="cuda").reshape(3, 4)[:, 1:]
    seen = _lorikeet._device_view(OnlyDLPack(t))
    assert seen[0] == t.data_ptr() and seen[1] == np.int32 and seen[2] == (3, 3) and seen[3] == (16, 4)


@needs_gpu
def test_threads_have_their_own_streams_and_error_records():
    import threading

    n = 200_000
    results = {}

    def work(k):
        x = np.arange(float(n))
        x[[n - 1 - k, 1000 * (k + 1)]] = -1.0
        for _ in range(5):
            _, (_, count), err, *_ = _lorikeet._gpu_selftest(x, 100 + k)
            results.setdefault(k, []).append((err[2][0], err[3], count))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(4):
        assert results[k] == [(1000 * (k + 1), 100 + k, n)] * 5
    # an array made on another thread carries that thread's stream until someone waits for it
    made = []
    t = threading.Thread(target=lambda: made.append(_lorikeet._device_empty(64)))
    t.start()
    t.join()
    assert isinstance(made[0].__cuda_array_interface__["stream"], int)
    assert made[0].copy_to_host().shape == (64,)
    assert made[0].__cuda_array_interface__["stream"] is None


@needs_gpu
@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork() here")
def test_a_child_forked_after_cuda_started_refuses_gpu_work():
    lk.to_device(np.arange(3))  # CUDA is initialised in this process
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, and leave without running anything of the parent's
        try:
            ok, why = lk.gpu_available()
            try:
                lk.to_device(np.arange(3))
                raised = "nothing"
            except lk.BackendUnavailable as e:
                raised = str(e)
            os.write(w, f"{ok}|{why}|{raised}".encode())
        finally:
            os._exit(0)
    os.close(w)
    msg = os.read(r, 4096).decode()
    os.waitpid(pid, 0)
    ok, why, raised = msg.split("|")
    assert ok == "False" and "fork" in why and raised == why
