"""python -m benchmarks.gpu [--quick] [--out FILE] [--only gemm,MNIST]: the gpu backend against CuPy, in one run, on this machine's GPU.

The rows of issue 10's table: each workload with device-resident inputs (lk.to_device / cupy.asarray, made once,
outside the timing) and again with NumPy inputs (copies included), lorikeet's gpu backend beside CuPy (the same
NumPy code run on CuPy arrays, through NumPy's dispatch protocols) and, where the workload has one, cupy.fuse.
Times are the wall clock of one call until its work is done (a device synchronisation), median of repeats after
warm-up; the host time of a one-kernel call is the time until the call returns, without waiting. The device's
copy bandwidth (pageable and pinned, each way) is measured in the same run. Prints a Markdown table and writes
the JSON to --out (default benchmarks/results/gpu-<mode>-<machine>.json), which `python -m benchmarks --report`
(and so `make bench`, which runs this after the suite) renders into docs/benchmarks.md. Without a usable GPU it
says why and exits 0, so `make bench` runs on any machine. The last row is data larger than the device (see
larger_than_device: its sizes come from $LORIKEET_BENCH_SPLIT_GIB and $LORIKEET_GPU_MEMORY_LIMIT); --split-only
runs that row alone, with the copy bandwidth it is compared with."""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

import lorikeet as lk

from . import harness, machine
from .workloads import conv, fused, matmult, pairwise, summation

try:
    import cupy
except Exception:  # CuPy absent: lorikeet's rows alone
    cupy = None


def sync():
    if cupy is not None:
        cupy.cuda.Device().synchronize()


def median_time(fn, repeats, warm=2, min_s=0.25, most=500):
    """The median of at least `repeats` calls, more (up to `most`) until they took min_s: a 0.1 ms call's median of
    ten moved by 5% from run to run."""
    for _ in range(warm):
        fn()
    sync()
    times = []
    while len(times) < repeats or (sum(times) < min_s and len(times) < most):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def cumsum(a):
    return np.cumsum(a)


def mnist_distance(q, p):
    return np.sqrt(np.einsum('ij,ij->i', q, q)[:, np.newaxis] - 2 * q @ p.T + np.einsum('ij,ij->i', p, p))


def fresh_kernel(a, b):
    return np.sqrt(a * a + 2.0 * b) - np.exp(-a)


def now_faster(x):
    return np.mean(x < 0)


def rows(quick):
    n10 = 1_000_000 if quick else 10_000_000
    n64 = 4_000_000 if quick else 64_000_000
    img = 300 if quick else 1200
    # matrix products: cuBLAS where libcublas is found, and the same rows on the tiled kernel of our own
    # (LORIKEET_GPU_CUBLAS=0, OWN_KERNEL in the title); the MNIST size is the issue's, 10000 queries by 10000
    mn = 2000 if quick else 10000
    mm = (300, 300, 300) if quick else (1200, 1200, 1200)
    rng = np.random.default_rng(0)
    yield "fused sqrt(a*a+b*b)*exp(-c), %d float64" % n10, fused.fused_expr, fused.make_inputs(n10), 4 * 8 * n10
    yield "fused, %d float64" % n64, fused.fused_expr, fused.make_inputs(n64), 4 * 8 * n64
    yield "np.sum, %d float64" % n10, summation.sum_array, summation.make_inputs(n10), 8 * n10
    yield "np.cumsum, %d float64" % n10, cumsum, (rng.random(n10),), 16 * n10
    yield "np.mean(x < 0), %d float64" % n10, now_faster, (rng.standard_normal(n10),), 8 * n10
    yield "conv_3x3_trim, %d^2 float64" % img, conv.conv_3x3_trim, conv.make_inputs(img), None
    q = rng.random((mn, 784), dtype=np.float32)
    p = rng.random((mn, 784), dtype=np.float32)
    for tail in ("", OWN_KERNEL):
        yield "MNIST distance %dx784 by %dx784 float32%s" % (mn, mn, tail), mnist_distance, (q, p), None
        yield "matmult comprehension %s float32%s" % (mm, tail), matmult.matmult_comprehension, matmult.make_inputs(mm), None
    # the notebook's float16 run: halves in device memory, the product on tensor cores (cuBLAS's GemmEx)
    yield "MNIST distance %dx784 by %dx784 float16" % (mn, mn), mnist_distance, (q.astype(np.float16), p.astype(np.float16)), None


OWN_KERNEL = ", own kernel"
# the products' references, checked on the first call's result
REFERENCES = {"MNIST": (mnist_distance, 1e-3), "matmult": (matmult.matmult_numpy, 1e-3)}


def measure_row(title, fn, args, nbytes, repeats):
    rec = {"workload": title}
    want = None
    f = lk.jit(fn, backend="gpu")
    own = title.endswith(OWN_KERNEL)
    if own:
        os.environ["LORIKEET_GPU_CUBLAS"] = "0"
    try:
        cublas_before = lk.runtime.stats()["cublas_calls"]
        t0 = time.perf_counter()
        got = f(*args)
        rec["first_call_s"] = time.perf_counter() - t0
        rec["cublas_calls"] = lk.runtime.stats()["cublas_calls"] - cublas_before
        want = fn(*args) if title.startswith(("fused", "np.")) else None
        ref = REFERENCES.get(title.split()[0])
        if ref and "float16" in title:  # against float32 from the same halves (NumPy's float16 matmul has no BLAS)
            want32 = ref[0](*(a.astype(np.float32) for a in args))
            np.testing.assert_allclose(np.asarray(got).astype(np.float32), want32, rtol=3e-2, atol=0.5)
        elif ref:
            np.testing.assert_allclose(np.asarray(got), ref[0](*args), rtol=ref[1], atol=ref[1])
        rec["lorikeet_numpy_in_s"] = median_time(lambda: f(*args), repeats)
        dargs = tuple(lk.to_device(a) if isinstance(a, np.ndarray) else a for a in args)
        rec["lorikeet_device_s"] = median_time(lambda: f(*dargs), repeats)
        if nbytes:
            rec["lorikeet_device_tbs"] = nbytes / rec["lorikeet_device_s"] / 1e12
        if want is not None:
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    except Exception as e:  # a row lorikeet cannot run yet says why
        rec["lorikeet_error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    finally:
        if own:
            del os.environ["LORIKEET_GPU_CUBLAS"]
    if cupy is not None and not own:
        try:
            cargs = tuple(cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in args)
            rec["cupy_device_s"] = median_time(lambda: fn(*cargs), repeats)
            rec["cupy_numpy_in_s"] = median_time(
                lambda: cupy.asnumpy(fn(*(cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in args))), repeats)
        except Exception as e:
            rec["cupy_error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return rec


def host_time_of_a_launch(repeats=2000):
    """Host time of a call that launches one kernel on device arrays, until it returns (no wait)."""
    def scale(a):
        return a * 2.0
    f = lk.jit(scale, backend="gpu")
    d = lk.to_device(np.ones(1024))
    for _ in range(50):
        f(d)
    sync()
    t0 = time.perf_counter()
    for _ in range(repeats):
        f(d)
    dt = (time.perf_counter() - t0) / repeats
    sync()
    out = {"lorikeet_host_s": dt}
    if cupy is not None:
        k = cupy.ElementwiseKernel("float64 x", "float64 y", "y = x * 2.0", "lk_bench_scale")
        c = cupy.ones(1024)
        for _ in range(50):
            k(c)
        sync()
        t0 = time.perf_counter()
        for _ in range(repeats):
            k(c)
        out["cupy_elementwise_host_s"] = (time.perf_counter() - t0) / repeats
        sync()
    return out


PLAIN_SUM = r"""
extern "C" __global__ void __launch_bounds__(256) plain_sum(const double2 *__restrict__ x, long long nv, double *part,
                                                          unsigned *ticket, double *out)
{
    double acc = 0;
    long long stride = (long long)gridDim.x * blockDim.x, q = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; q + 7 * stride < nv; q += 8 * stride) {
        double2 v[8];
#pragma unroll
        for (int u = 0; u < 8; u++) v[u] = x[q + u * stride];
#pragma unroll
        for (int u = 0; u < 8; u++) {
            acc += v[u].x;
            acc += v[u].y;
        }
    }
    for (; q < nv; q += stride) {
        double2 v = x[q];
        acc += v.x;
        acc += v.y;
    }
    __shared__ double sh[32];
    __shared__ bool last;
    for (int o = 16; o; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = acc;
    __syncthreads();
    if (threadIdx.x < 32) {
        acc = threadIdx.x < blockDim.x / 32 ? sh[threadIdx.x] : 0;
        for (int o = 16; o; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
        if (threadIdx.x == 0) part[blockIdx.x] = acc;
    }
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    double b = 0;
    for (unsigned j = threadIdx.x; j < gridDim.x; j += blockDim.x) b += part[j];
    for (int o = 16; o; o >>= 1) b += __shfl_down_sync(0xffffffffu, b, o);
    __syncthreads();
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = b;
    __syncthreads();
    if (threadIdx.x == 0) {
        double t = 0;
        for (unsigned w = 0; w < blockDim.x / 32; w++) t += sh[w];
        *out = t;
        *ticket = 0;
    }
}
"""


def plain_sum(n, repeats):
    """The sum's peer: the plain kernel of the issue's table (one launch, 8 wide loads a thread, the last block
    combining the blocks' partials in order), launched through CuPy on 4 blocks an SM, the result copied back:
    the wall clock of that call, and the kernel's own time (events around 50 back-to-back launches)."""
    if cupy is None:
        return {}
    a = np.random.default_rng(0).random(n)
    x = cupy.asarray(a)
    k = cupy.RawModule(code=PLAIN_SUM).get_function("plain_sum")
    grid = 4 * cupy.cuda.Device().attributes["MultiProcessorCount"]
    part, ticket, res = cupy.zeros(grid), cupy.zeros(1, dtype=np.uint32), cupy.zeros(1)

    def call():
        k((grid,), (256,), (x, np.int64(n // 2), part, ticket, res))
        return float(res.get()[0])
    np.testing.assert_allclose(call(), a.sum(), rtol=1e-9)
    out = {"n": n, "wall_s": median_time(call, repeats)}
    e0, e1 = cupy.cuda.Event(), cupy.cuda.Event()
    e0.record()
    for _ in range(50):
        k((grid,), (256,), (x, np.int64(n // 2), part, ticket, res))
    e1.record()
    e1.synchronize()
    out["kernel_s"] = cupy.cuda.get_elapsed_time(e0, e1) / 50 / 1e3
    return out


def first_calls():
    """First call of new kernels in this process (NVRTC included): the first, then a few more. Each has its own
    constant, so its CUDA C differs and NVRTC runs (the runtime keeps the images of identical kernel sources)."""
    times = []
    for k in range(4):
        fresh = harness.fresh_function(fresh_kernel, f"gpu_{k}", edits=[("2.0 * b", f"{k + 2}.5 * b")])
        f = lk.jit(fresh, backend="gpu", cache=False)  # a compile each time, whatever an earlier run left on disk
        a = np.linspace(0, 1, 1000)
        t0 = time.perf_counter()
        f(a, a)
        times.append(time.perf_counter() - t0)
    return times


def mm_at(a, b):
    return a @ b


def gemm_rates(n):
    """C = A @ B of n x n float32 device arrays: TFLOP/s of cuBLAS (through lorikeet), of lorikeet's own kernel
    (LORIKEET_GPU_CUBLAS=0) and of CuPy's matmul, and the own kernel's share of cuBLAS's rate."""
    rng = np.random.default_rng(1)
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    da, db = lk.to_device(a), lk.to_device(b)
    f = lk.jit(mm_at, backend="gpu")
    flops = 2.0 * n ** 3
    out = {"n": n}
    for key, env in (("cublas", None), ("own_kernel", "0")):
        if env:
            os.environ["LORIKEET_GPU_CUBLAS"] = env
        try:
            got = np.asarray(f(da, db))
            np.testing.assert_allclose(got[:64], a[:64] @ b, rtol=1e-3)
            out[key + "_tflops"] = flops / median_time(lambda: f(da, db), 10) / 1e12
        except Exception as e:
            out[key + "_error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        finally:
            os.environ.pop("LORIKEET_GPU_CUBLAS", None)
    if cupy is not None:
        ca, cb = cupy.asarray(a), cupy.asarray(b)
        out["cupy_tflops"] = flops / median_time(lambda: ca @ cb, 10) / 1e12
    if "cublas_tflops" in out and "own_kernel_tflops" in out:
        out["own_kernel_percent_of_cublas"] = 100.0 * out["own_kernel_tflops"] / out["cublas_tflops"]
    return out


def copy_bandwidth(nbytes=1 << 28):
    out = {}
    host = np.ones(nbytes // 8)
    d = lk.to_device(host)  # the first copy also makes the pinned staging buffers: the median of the next ones
    out["lorikeet_to_device_gbs"] = nbytes / median_time(lambda: lk.to_device(host), 3) / 1e9
    out["lorikeet_copy_to_host_gbs"] = nbytes / median_time(lambda: d.copy_to_host(), 3) / 1e9
    if cupy is not None:
        c = cupy.empty(nbytes // 8)
        out["pageable_h2d_gbs"] = nbytes / median_time(lambda: c.set(host), 3) / 1e9
        out["pageable_d2h_gbs"] = nbytes / median_time(lambda: c.get(), 3) / 1e9
        pinned = cupy.cuda.alloc_pinned_memory(nbytes)
        ph = np.frombuffer(pinned, dtype=np.float64, count=nbytes // 8)
        out["pinned_h2d_gbs"] = nbytes / median_time(lambda: c.set(ph), 3) / 1e9
    return out


def larger_than_device(quick, pinned_gbs):
    """Issue 13's row for data larger than the device: the fused map over three float64 NumPy arrays of
    $LORIKEET_BENCH_SPLIT_GIB GiB each (8; --quick 1) with the device limited to $LORIKEET_GPU_MEMORY_LIMIT (4G;
    --quick 512M), so that the call runs in pieces. Bytes moved (three inputs up, the result down) per second,
    against the pinned copy bandwidth measured in the same run (target: 70% or more). Checked against NumPy on
    slices of the result at its start, middle and end."""
    from lorikeet import _lorikeet
    gib = float(os.environ.get("LORIKEET_BENCH_SPLIT_GIB", "1" if quick else "8"))
    limit = os.environ.get("LORIKEET_GPU_MEMORY_LIMIT", "512M" if quick else "4G")
    n = int(gib * (1 << 30)) // 8
    rec = {"workload": f"fused map, 3 x {gib:g} GiB float64 NumPy in/out, device limited to {limit}",
           "elements": n, "limit": limit}
    saved = os.environ.get("LORIKEET_GPU_MEMORY_LIMIT")
    try:
        rng = np.random.default_rng(1)
        a, b, c = (rng.random(n) for _ in range(3))
        os.environ["LORIKEET_GPU_MEMORY_LIMIT"] = limit
        _lorikeet._split_reload_env()
        f = lk.jit(fused.fused_expr, backend="gpu")
        before = _lorikeet._split_stats()
        got = f(a, b, c)
        after = _lorikeet._split_stats()
        rec["pieces"] = after["pieces"] - before["pieces"]
        for lo in (0, n // 2, max(0, n - (1 << 20))):
            s = slice(lo, lo + (1 << 20))
            np.testing.assert_allclose(got[s], fused.fused_numpy(a[s], b[s], c[s]), rtol=1e-14)
        del got
        times = []
        for _ in range(2 if quick else 3):
            t0 = time.perf_counter()
            r = f(a, b, c)
            times.append(time.perf_counter() - t0)
            del r
        rec["lorikeet_numpy_in_s"] = statistics.median(times)
        rec["gbs"] = 4 * 8 * n / rec["lorikeet_numpy_in_s"] / 1e9
        if pinned_gbs:
            rec["pinned_h2d_gbs"] = pinned_gbs
            rec["fraction_of_pinned"] = rec["gbs"] / pinned_gbs
    except Exception as e:
        rec["lorikeet_error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    finally:
        if saved is None:
            os.environ.pop("LORIKEET_GPU_MEMORY_LIMIT", None)
        else:
            os.environ["LORIKEET_GPU_MEMORY_LIMIT"] = saved
        _lorikeet._split_reload_env()
    return rec


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.gpu")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("--split-only", action="store_true",
                    help="only the row of data larger than the device (and the copy bandwidth it is measured against)")
    ap.add_argument("--only", help="comma-separated: the rows whose title contains one of these, and the own GEMM "
                    "kernel's rate if one is 'gemm'; the other sections are skipped, and the JSON is written only "
                    "with --out")
    args = ap.parse_args(argv)
    only = [w for w in (args.only or "").split(",") if w]
    ok = lk.gpu_available()
    if not ok[0]:
        print(f"gpu rows skipped, no usable GPU: {ok[1]}", file=sys.stderr)
        return 0
    repeats = 5 if args.quick else 10
    mode = "quick" if args.quick else "full"
    info = machine.describe()
    res = {"kind": "gpu", "mode": mode, "date": time.strftime("%Y-%m-%d %H:%M"), "machine": info,
           "versions": machine.versions(), "cupy": getattr(cupy, "__version__", None)}
    if args.split_only:
        res["copies"] = copy_bandwidth()
        print(f"copies: {res['copies']}", flush=True)
        res["larger_than_device"] = r = larger_than_device(args.quick, res["copies"].get("pinned_h2d_gbs"))
        print(json.dumps(r, indent=1), flush=True)
        out = args.out or os.path.join(os.path.dirname(__file__), "results", f"gpu-split-{mode}-{machine.slug(info)}.json")
        with open(out, "w") as fh:
            json.dump(res, fh, indent=1)
        return 0
    if not only:
        res["first_calls_s"] = first_calls()
        print(f"first calls (NVRTC included), s: {res['first_calls_s']}", flush=True)
        res["launch"] = host_time_of_a_launch()
        print(f"host time of a one-kernel call: {res['launch']}", flush=True)
        res["copies"] = copy_bandwidth()
        print(f"copies: {res['copies']}", flush=True)
    if not only or "gemm" in only:
        res["gemm"] = gemm_rates(2048 if args.quick else 4096)
        g = res["gemm"]
        print(f"own GEMM kernel against cuBLAS, {g['n']}^2 float32, device arrays, TFLOP/s: "
              + ", ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}" for k, v in g.items() if k != "n"),
              flush=True)
    if not only or any(w in "np.sum" for w in only):
        res["plain_sum"] = plain_sum(1_000_000 if args.quick else 10_000_000, repeats)
        print(f"np.sum's plain kernel through CuPy: {res['plain_sum']}", flush=True)
    print("| workload | lorikeet, device arrays | CuPy, device arrays | lorikeet, NumPy in/out | CuPy, NumPy in/out |")
    print("| --- | --- | --- | --- | --- |", flush=True)

    def ms(r, k):
        return f"{r[k] * 1e3:.3f} ms" if k in r else r.get(k.split('_')[0] + "_error", "—")
    res["rows"] = []
    for row in rows(args.quick):
        if only and not any(w in row[0] for w in only):
            continue
        r = measure_row(*row, repeats)
        res["rows"].append(r)
        extra = f" ({r['lorikeet_device_tbs']:.2f} TB/s)" if "lorikeet_device_tbs" in r else ""
        print(f"| {r['workload']} | {ms(r, 'lorikeet_device_s')}{extra} | {ms(r, 'cupy_device_s')} | "
              f"{ms(r, 'lorikeet_numpy_in_s')} | {ms(r, 'cupy_numpy_in_s')} |", flush=True)
    if only and not args.out:
        return 0
    if not only:
        res["larger_than_device"] = r = larger_than_device(args.quick, res["copies"].get("pinned_h2d_gbs"))
        frac = f", {r['fraction_of_pinned']:.0%} of pinned" if "fraction_of_pinned" in r else ""
        print(f"| {r['workload']} | — | — | {ms(r, 'lorikeet_numpy_in_s')} ({r.get('gbs', 0):.1f} GB/s{frac}) | — |",
              flush=True)
    out = args.out or os.path.join(os.path.dirname(__file__), "results", f"gpu-{mode}-{machine.slug(info)}.json")
    with open(out, "w") as fh:
        json.dump(res, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
