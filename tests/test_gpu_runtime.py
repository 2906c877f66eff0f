"""The gpu runtime (runtime/gpu_*.c, runtime/nvrtc.c), through lorikeet._lorikeet's private entry points.

What needs no GPU runs everywhere: the refusal where there is no driver or device, counters that read without
initialising CUDA, NVRTC (which compiles on any machine). What needs a GPU is skipped, with the reason, where
lk.gpu_available() says there is none."""
import gc
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

import lorikeet as lk
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
            "device_frees", "device_live_bytes", "launches", "compiles")

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
def test_without_a_gpu_the_selftest_says_why():
    assert GPU_WHY  # one sentence naming the case
    with pytest.raises(lk.BackendUnavailable) as e:
        _lorikeet._gpu_selftest(np.arange(4.0))
    assert str(e.value) == GPU_WHY
    if "libcuda" in GPU_WHY:  # the machine without a driver at all (CI)
        assert GPU_WHY.startswith("no CUDA driver: libcuda.so.1 was not found")


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


# ---- with a GPU ----

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


@needs_gpu
@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork() here")
def test_a_child_forked_after_cuda_started_refuses_gpu_work():
    _lorikeet._gpu_selftest(np.arange(3.0))  # CUDA is initialised in this process
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, and leave without running anything of the parent's
        try:
            ok, why = lk.gpu_available()
            try:
                _lorikeet._gpu_selftest(np.arange(3.0))
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
