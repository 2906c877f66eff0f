"""gpu_smoke.py: the gpu runtime's checks on a machine with a GPU, each printed PASS or FAIL, then timings.

    make all && PYTHONPATH=pyshim python3 scripts/gpu_smoke.py

Checks what tests/test_gpu_runtime.py checks (and prints what it finds where the tests would only fail): the
driver and NVRTC found, round trips through lk.to_device / copy_to_host / np.asarray, __cuda_array_interface__
v3, CuPy and PyTorch taking a DeviceArray without a copy (and lorikeet seeing theirs), the transfer counters, the
self-test kernels (a map and a reduce over the slot block, the lowest failing index's error), MemoryError for an
impossible allocation with the device usable after. Timings: a launch and wait for one kernel (host time), and
lk.to_device of 256 MB. Exit status 1 when any check failed."""
import gc
import sys
import time
import traceback

import numpy as np

import lorikeet as lk
from lorikeet import _lorikeet

failures = 0


def check(name, fn):
    global failures
    t0 = time.perf_counter()
    try:
        note = fn()
        print(f"PASS  {name}  ({(time.perf_counter() - t0) * 1e3:.1f} ms){'  ' + str(note) if note else ''}")
    except Exception:
        failures += 1
        print(f"FAIL  {name}")
        traceback.print_exc(limit=4, file=sys.stdout)
    sys.stdout.flush()


def delta(before, after, key):
    return after[key] - before[key]


def nvrtc():
    src = 'extern "C" __global__ void k(double *x) { x[threadIdx.x] *= 2; }'
    image, is_ptx = _lorikeet._nvrtc_compile(src, 90)
    assert image[:4] == b"\x7fELF" and not is_ptx
    try:
        _lorikeet._nvrtc_compile(src.replace("2;", "2"), 90)
    except lk.InternalError as e:
        assert "expected" in str(e), str(e)
    else:
        raise AssertionError("a syntax error compiled")


def round_trips():
    rng = np.random.default_rng(1)
    n = 0
    for dtype in (np.float64, np.float32, np.float16, np.int64, np.int32, np.uint8, np.bool_, np.complex64):
        for shape in ((0,), (1,), (1001,), (7, 9), (2, 3, 4), ()):
            x = (rng.random(shape) * 100).astype(dtype)
            d = lk.to_device(x)
            assert d.shape == x.shape and d.dtype == x.dtype and (d.strides == x.strides or not x.size), (d, x.strides)
            np.testing.assert_array_equal(d.copy_to_host(), x)
            np.testing.assert_array_equal(np.asarray(d), x)
            n += 1
    base = np.arange(600.0).reshape(20, 30)
    for x in (base[::3, 2::4], base.T, base[::-1, ::-2], np.asfortranarray(base), base.astype(">f8")):
        np.testing.assert_array_equal(lk.to_device(x).copy_to_host(), x)
        n += 1
    return f"{n} arrays"


def cai():
    d = lk.to_device(np.arange(12, dtype=np.int32).reshape(3, 4))
    c = d.__cuda_array_interface__
    assert c["version"] == 3 and c["shape"] == (3, 4) and c["typestr"] == "<i4" and c["strides"] is None, c
    assert c["data"] == (d.ptr, False) and c["stream"] is None, c
    assert d.__dlpack_device__() == (2, 0)


def counters():
    x = np.ones(1 << 20)
    s0 = lk.runtime.stats()
    d = lk.to_device(x)
    s1 = lk.runtime.stats()
    d.copy_to_host()
    s2 = lk.runtime.stats()
    assert delta(s0, s1, "h2d_copies") == 1 and delta(s0, s1, "h2d_bytes") == x.nbytes, (s0, s1)
    assert delta(s1, s2, "d2h_copies") == 1 and delta(s1, s2, "d2h_bytes") == x.nbytes, (s1, s2)
    assert delta(s0, s1, "device_allocations") == 1 and delta(s0, s1, "device_live_bytes") == x.nbytes
    del d
    gc.collect()
    s3 = lk.runtime.stats()
    assert delta(s2, s3, "device_frees") == 1 and s3["device_live_bytes"] == s0["device_live_bytes"], (s2, s3)


def cupy_interop():
    try:
        import cupy
    except ImportError:
        return "cupy not importable: skipped"
    x = np.arange(24.0).reshape(4, 6)
    d = lk.to_device(x)
    c = cupy.asarray(d)
    assert c.data.ptr == d.ptr, (c.data.ptr, d.ptr)
    np.testing.assert_array_equal(cupy.asnumpy(c), x)
    c2 = cupy.from_dlpack(d)
    assert c2.data.ptr == d.ptr
    seen = _lorikeet._device_view(c[:, ::2])
    assert seen[0] == d.ptr and seen[2] == (4, 3) and seen[3] == (48, 16), seen
    # an array CuPy made, with work queued on its stream
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        big = cupy.arange(1 << 22, dtype=cupy.float64) * 3
        seen = _lorikeet._device_view(big)
    assert seen[0] == big.data.ptr
    return "asarray, from_dlpack and back"


def torch_interop():
    try:
        import torch
    except ImportError:
        return "torch not importable: skipped"
    x = np.arange(10, dtype=np.float32)
    d = lk.to_device(x)
    t = torch.from_dlpack(d)
    assert t.data_ptr() == d.ptr and t.device.type == "cuda"
    np.testing.assert_array_equal(t.cpu().numpy(), x)
    seen = _lorikeet._device_view(t[2:])
    assert seen[0] == d.ptr + 8 and seen[2] == (8,) and seen[3] == (4,), seen

    class OnlyDLPack:  # DLPack alone, as JAX's arrays offer: lorikeet's DLPack import
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kw):
            return self.a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    u = torch.arange(12, dtype=torch.int32, device="cuda").reshape(3, 4)[:, 1:]
    seen = _lorikeet._device_view(OnlyDLPack(u))
    assert seen[0] == u.data_ptr() and seen[2] == (3, 3) and seen[3] == (16, 4), seen
    seen = _lorikeet._device_view(OnlyDLPack(d))
    assert seen[0] == d.ptr and seen[2] == (10,), seen
    return "from_dlpack, and torch's and lorikeet's arrays through DLPack"


def selftest():
    x = np.arange(100_000.0)
    s0 = lk.runtime.stats()
    y, (total, count), err, last = _lorikeet._gpu_selftest(x)
    s1 = lk.runtime.stats()
    assert err is None, err
    want = 2 * x + 1
    assert last == want[-1], last  # rt_gpu_read_elem
    want[0] = -last  # rt_gpu_write_elem
    np.testing.assert_array_equal(y, want)
    assert total == int(x.sum()) and count == x.size, (total, count)
    assert delta(s0, s1, "launches") == 2 and delta(s0, s1, "device_frees") == 2, (s0, s1)
    for n in (1000, 5_000_000):
        x = np.arange(float(n))
        bad = [n - 1, n // 2, n // 3 + 1, 123]
        x[bad] = -1.0
        _, (_, count), err, *_ = _lorikeet._gpu_selftest(x, 42)
        assert err is not None and err[0] == "IndexError" and err[2] == [123, n, 0] and err[3] == 42, err
        assert count == n
        _, _, err, *_ = _lorikeet._gpu_selftest(np.arange(10.0))
        assert err is None, err
    s2 = lk.runtime.stats()
    _, (total, count), err, *_ = _lorikeet._gpu_selftest(np.zeros(0))
    assert err is None and total == 0 and count == 0
    assert delta(s2, lk.runtime.stats(), "launches") == 1
    return "map, reduce, lowest index, empty launch"


def out_of_memory():
    try:
        _lorikeet._device_empty(1 << 50)
    except MemoryError as e:
        msg = str(e)
        assert "1125899906842624 bytes" in msg and "pool holds" in msg and "free of" in msg, msg
    else:
        raise AssertionError("1 PiB was allocated")
    d = lk.to_device(np.arange(5))
    np.testing.assert_array_equal(d.copy_to_host(), np.arange(5))
    assert lk.gpu_available() == (True, None)
    return msg


def timings():
    _lorikeet._gpu_launch_roundtrip(100, True)
    rt = min(_lorikeet._gpu_launch_roundtrip(1000, True) for _ in range(3))
    launch = min(_lorikeet._gpu_launch_roundtrip(1000, False) for _ in range(3))
    x = np.random.default_rng(0).random(32 << 20)  # 256 MiB of float64
    lk.to_device(x[:1000])
    up, down = [], []
    for _ in range(3):
        t0 = time.perf_counter()
        d = lk.to_device(x)
        t1 = time.perf_counter()
        h = d.copy_to_host()
        t2 = time.perf_counter()
        up.append(t1 - t0)
        down.append(t2 - t1)
        del d
    assert np.array_equal(h, x)
    return (f"launch + sync round trip {rt * 1e6:.1f} us, launch alone {launch * 1e6:.1f} us (host time); "
            f"to_device 256 MiB {min(up) * 1e3:.1f} ms = {x.nbytes / min(up) / 1e9:.2f} GB/s, copy_to_host "
            f"{min(down) * 1e3:.1f} ms = {x.nbytes / min(down) / 1e9:.2f} GB/s (pageable host memory)")


def main():
    ok, why = lk.gpu_available()
    info = f"gpu_available: {ok} {why or ''}"
    print(info)
    check("gpu available", lambda: None if ok else (_ for _ in ()).throw(AssertionError(why)))
    check("NVRTC cubin for sm_90 and a syntax error's log", nvrtc)
    if not ok:
        print("no usable GPU: the device checks are not run")
        return 1
    for name, fn in (("round trips", round_trips), ("cuda array interface v3", cai), ("transfer counters", counters),
                     ("cupy interop", cupy_interop), ("torch interop", torch_interop),
                     ("self-test kernels", selftest), ("out of memory", out_of_memory), ("timings", timings)):
        check(name, fn)
    print("stats:", lk.runtime.stats())
    print("FAILED" if failures else "ALL PASSED", f"({failures} failed)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
