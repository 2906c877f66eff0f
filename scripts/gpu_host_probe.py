"""gpu_host_probe.py: the host-side figures of issue 10's table, in one run on a GPU machine, CuPy beside them
where it imports. Prints one table; never needs CuPy (its column says why it is empty).

    PYTHONPATH=pyshim .venv/bin/python scripts/gpu_host_probe.py [--quick]

Rows:
  * host time of a call that launches one kernel, on device arrays (median of many calls, each timed alone; the
    call returns once its kernel is queued: a map whose checks were all proven away does not wait), and the same
    call followed by a wait for its result (a copy of one element back);
  * the same call with NumPy arguments (copies in and out included);
  * lorikeet's own raw launch (the runtime's launch of a one-element kernel, no Python) and CuPy's raw launch of
    a trivial elementwise kernel (a RawKernel), each without and with a wait;
  * copy bandwidth host->device and back, through lorikeet's pinned staging and from pageable memory (the same
    copies in a child process with LORIKEET_GPU_PINNED_MB=0), and CuPy's copies from pinned memory;
  * the first call of a new kernel, NVRTC included: first in a fresh process, then a second new kernel in the
    same process, then a third function whose kernel is the same code (the NVRTC memo)."""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "pyshim"))

import lorikeet as lk  # noqa: E402
from lorikeet import _lorikeet  # noqa: E402


def median_us(fn, n, warm=20):
    for _ in range(warm):
        fn()
    times = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - t0)
    return statistics.median(times) / 1e3


def step(a, b):
    return a * 2.0 + b


def call_rows(n):
    f = lk.jit(step, backend="gpu")
    x = np.linspace(0, 1, 1024)
    dx = lk.to_device(x)
    f(dx, dx).copy_to_host()
    s0 = lk.runtime.stats()
    keep = [None]

    def device_call():
        keep[0] = f(dx, dx)  # the previous result dies here: its free is stream-ordered

    us = median_us(device_call, n)
    s1 = lk.runtime.stats()
    calls = n + 20
    waits = (s1["waits"] - s0["waits"]) / calls
    copies = (s1["h2d_copies"] - s0["h2d_copies"] + s1["d2h_copies"] - s0["d2h_copies"]) / calls
    us_wait = median_us(lambda: f(dx, dx).copy_to_host(), max(n // 4, 50))
    us_numpy = median_us(lambda: f(x, x), max(n // 4, 50))
    return [
        ("one-kernel call, device arrays (host time)", f"{us:.1f} µs", f"waits/call {waits:.2f}, copies/call {copies:.2f}", "<= 8 µs"),
        ("  the same call + wait for its result", f"{us_wait:.1f} µs", "(a copy of 8 KB back)", ""),
        ("one-kernel call, NumPy arguments (1024 float64)", f"{us_numpy:.1f} µs", "copies in and out", ""),
    ]


def raw_rows(n):
    rows = []
    ours = _lorikeet._gpu_launch_roundtrip(n, False) * 1e6
    ours_sync = _lorikeet._gpu_launch_roundtrip(max(n // 4, 50), True) * 1e6
    rows.append(("lorikeet raw launch (runtime, no Python)", f"{ours:.1f} µs", f"+ wait each: {ours_sync:.1f} µs", ""))
    try:
        import cupy
    except Exception as e:  # noqa: BLE001 - any import failure: the column says why
        rows.append(("CuPy raw launch of an elementwise kernel", "", f"CuPy unavailable: {type(e).__name__}: {e}"[:70], ""))
        return rows
    kern = cupy.RawKernel(r'''
extern "C" __global__ void axpb(const double *x, double *y, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0 * x[i] + 1.0;
}''', "axpb")
    x = cupy.linspace(0, 1, 1024)
    y = cupy.empty_like(x)
    args = (x, y, np.int64(1024))
    kern((4,), (256,), args)
    cupy.cuda.Device().synchronize()
    launch = median_us(lambda: kern((4,), (256,), args), n)
    stream = cupy.cuda.get_current_stream()

    def launch_sync():
        kern((4,), (256,), args)
        stream.synchronize()

    launch_wait = median_us(launch_sync, max(n // 4, 50))
    rows.append(("CuPy raw launch of an elementwise kernel", "", f"{launch:.1f} µs; + wait: {launch_wait:.1f} µs", "(reference)"))
    return rows


def bandwidth(nbytes, reps):
    """GB/s up (to_device) and down (copy_to_host) with lorikeet's copies, best of reps."""
    x = np.random.default_rng(0).random(nbytes // 8)
    up, down = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        d = lk.to_device(x)
        t1 = time.perf_counter()
        d.copy_to_host()
        t2 = time.perf_counter()
        up.append(nbytes / (t1 - t0) / 1e9)
        down.append(nbytes / (t2 - t1) / 1e9)
        del d
    return max(up), max(down)


def cupy_pinned_bandwidth(nbytes, reps):
    import cupy

    mem = cupy.cuda.alloc_pinned_memory(nbytes)
    h = np.frombuffer(mem, np.uint8, nbytes)
    h[:] = 1
    d = cupy.empty(nbytes, np.uint8)
    stream = cupy.cuda.Stream(non_blocking=True)
    up, down = [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        d.set(h, stream=stream)
        stream.synchronize()
        t1 = time.perf_counter()
        d.get(stream=stream, out=h)
        stream.synchronize()
        t2 = time.perf_counter()
        up.append(nbytes / (t1 - t0) / 1e9)
        down.append(nbytes / (t2 - t1) / 1e9)
    return max(up), max(down)


def child(code, env_extra):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "pyshim"), **env_extra)
    # a file, not -c: lorikeet reads a jitted function's source from its file
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
        fh.write(code)
    try:
        out = subprocess.run([sys.executable, fh.name], capture_output=True, text=True, env=env, timeout=600)
    finally:
        os.unlink(fh.name)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip().splitlines()[-1] if out.stderr.strip() else f"exit {out.returncode}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def copy_rows(nbytes, reps):
    up, down = bandwidth(nbytes, reps)
    info = _lorikeet._gpu_staging_info()
    code = ("import sys, json; sys.path.insert(0, %r); import gpu_host_probe as p; "
            "print(json.dumps(p.bandwidth(%d, %d)))" % (HERE, nbytes, reps))
    try:
        pup, pdown = child(code, {"LORIKEET_GPU_PINNED_MB": "0"})
        pageable = f"{pup:.1f} up / {pdown:.1f} down"
    except Exception as e:  # noqa: BLE001 - reported in the table
        pageable = f"failed: {e}"[:60]
    try:
        cup, cdown = cupy_pinned_bandwidth(nbytes, reps)
        ref = f"CuPy pinned: {cup:.1f} up / {cdown:.1f} down"
    except Exception as e:  # noqa: BLE001 - CuPy missing or failing: say so
        ref = f"CuPy unavailable: {type(e).__name__}"[:60]
    mb = nbytes >> 20
    return [
        (f"copies of {mb} MB, pinned staging (GB/s)", f"{up:.1f} up / {down:.1f} down",
         f"{info['pinned_bytes'] >> 20} MB pinned; {ref}", "pinned ~55"),
        (f"copies of {mb} MB, pageable (GB/s)", pageable, "LORIKEET_GPU_PINNED_MB=0", "was 9.3 / 3.3"),
    ]


FIRST_CALL = r"""
import json, time, numpy as np, lorikeet as lk
x = lk.to_device(np.linspace(0, 1, 1000))
def f1(a): return np.sqrt(a * a + 1.0)
def f2(a): return np.exp(-a) * 3.0 + a
def f3(b):
    return np.exp(-b) * 3.0 + b
out = []
for f in (f1, f2, f3):
    g = lk.jit(f, backend="gpu")
    c0 = lk.runtime.stats()["compiles"]
    t0 = time.perf_counter()
    g(x).copy_to_host()
    out.append([(time.perf_counter() - t0) * 1e3, lk.runtime.stats()["compiles"] - c0])
print(json.dumps(out))
"""


def first_call_rows():
    try:
        (t1, c1), (t2, c2), (t3, c3) = child(FIRST_CALL, {})
    except Exception as e:  # noqa: BLE001 - reported in the table
        return [("first call of a new kernel", f"failed: {e}"[:60], "", "")]
    return [
        ("first call of a new kernel, first in process", f"{t1:.0f} ms", f"NVRTC runs: {c1}", "<= 250 ms"),
        ("first call of a second new kernel", f"{t2:.0f} ms", f"NVRTC runs: {c2}", "<= 80 ms"),
        ("first call of a function with the same kernel", f"{t3:.0f} ms", f"NVRTC runs: {c3} (memo)", ""),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions, smaller copies")
    opts = ap.parse_args()
    ok, why = lk.gpu_available()
    if not ok:
        print(f"gpu_host_probe: no usable GPU here: {why}")
        return 2
    n = 300 if opts.quick else 3000
    nbytes = (64 if opts.quick else 512) << 20
    reps = 2 if opts.quick else 4
    rows = []
    for part in (lambda: call_rows(n), lambda: raw_rows(n), lambda: copy_rows(nbytes, reps), first_call_rows):
        try:
            rows += part()
        except Exception as e:  # noqa: BLE001 - one failing part must not hide the others
            rows.append((getattr(part, "__name__", "a part"), f"failed: {type(e).__name__}: {e}"[:70], "", ""))
    print(f"gpu host probe, lorikeet at {ROOT}")
    head = ("quantity", "lorikeet", "notes / CuPy", "target")
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(4)]
    line = " | ".join(h.ljust(w) for h, w in zip(head, widths))
    print(line)
    print("-+-".join("-" * w for w in widths))
    for r in rows:
        print(" | ".join(str(c).ljust(w) for c, w in zip(r, widths)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
