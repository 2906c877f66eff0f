"""gpu_codegen_probe.py: the gpu backend's kernels on a real GPU, against the cpu backend. For the GPU host, once
the host side (backends/llvm's gpu mode, runtime's rt_gpu_*) is merged; nothing here runs without them.

    PYTHONPATH=pyshim:tests .venv/bin/python scripts/gpu_codegen_probe.py [--quick] [--save-cuda DIR]

Runs every function of tests/test_gpu_codegen.py's own corpus and of the emulated kernel tests on both backends
with the same arguments (copies, so that in-place writes compare too), at the sizes given there and at a large
size where the function takes one array, and prints one line per function: ok, MISMATCH (with the largest
difference), or the exception each backend raised (the same exception on both counts as ok: errors must match
too). Then times a few kernels (wall clock of the call, NumPy inputs and, where lk.to_device exists, device
arrays). Exit status 1 when anything mismatched."""
import argparse
import os
import sys
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "pyshim"), os.path.join(HERE, "..", "tests")]

import lorikeet as lk  # noqa: E402


def copy_args(args):
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def run(d, args):
    try:
        return d(*copy_args(args)), None
    except Exception as e:  # noqa: BLE001 - compared between the backends
        return None, e


def compare(want, got):
    """None when equal (floats within rounding), else a description."""
    if isinstance(want, tuple):
        if not isinstance(got, tuple) or len(got) != len(want):
            return f"{got!r} != {want!r}"
        for w, g in zip(want, got):
            r = compare(w, g)
            if r:
                return r
        return None
    w, g = np.asarray(want), np.asarray(got)
    if w.shape != g.shape or w.dtype != g.dtype:
        return f"shape/dtype {g.shape} {g.dtype} != {w.shape} {w.dtype}"
    if w.dtype.kind == "f":
        rtol = 1e-5 if w.dtype == np.float32 else 1e-10
        if not np.allclose(g, w, rtol=rtol, atol=0, equal_nan=True):
            diff = np.nanmax(np.abs(g.astype(np.float64) - w.astype(np.float64)))
            return f"max |difference| {diff:.3g}"
        return None
    return None if np.array_equal(g, w) else f"{np.count_nonzero(g != w)} elements differ"


def corpus(quick):
    import test_gpu_codegen as cg
    import test_gpu_kernels_emulated as em
    calls = list(cg.OWN)
    calls += [(em.gather, (np.arange(10.0), np.arange(10) % 10)), (em.prange_reductions, (np.random.rand(10_000),)),
              (em.collatz, (1000, np.zeros(1000, dtype=np.int64))), (em.grid_of, (30, 50))]
    for fn in (em.r_sum, em.r_prod, em.r_min, em.r_max, em.r_argmin, em.r_argmax, em.r_nanmin, em.r_nanmax, em.r_any,
               em.r_all):
        for dt in (np.int32, np.int64, np.float32, np.float64, np.bool_):
            calls.append((fn, (em.sample(dt, 1000 if quick else 3_000_001, np.random.default_rng(5)),)))
    calls += cg.workload_calls()
    return calls


def probe(quick):
    bad = 0
    for fn, args in corpus(quick):
        name = getattr(fn, "__name__", str(fn))
        cpu, gpu = lk.jit(fn, backend="cpu"), lk.jit(fn, backend="gpu")
        want, werr = run(cpu, args)
        got, gerr = run(gpu, args)
        if werr or gerr:
            same = werr is not None and gerr is not None and type(werr) is type(gerr)
            status = "ok (both raise)" if same else f"ERROR cpu: {werr!r}; gpu: {gerr!r}"
        else:
            diff = compare(want, got)
            status = "ok" if diff is None else f"MISMATCH {diff}"
        bad += not status.startswith("ok")
        print(f"{name:32s} {status}")
    return bad


def timings():
    rng = np.random.default_rng(0)
    a, b, c = (rng.random(10_000_000) for _ in range(3))

    def fused(a, b, c):
        return np.sqrt(a * a + b * b) * np.exp(-c)

    def total(a):
        return np.sum(a)

    def running(a):
        return np.cumsum(a)

    for fn, args in ((fused, (a, b, c)), (total, (a,)), (running, (a,))):
        d = lk.jit(fn, backend="gpu")
        t = time.perf_counter()
        d(*args)
        first = time.perf_counter() - t
        ts = []
        for _ in range(10):
            t = time.perf_counter()
            d(*args)
            ts.append(time.perf_counter() - t)
        line = f"{fn.__name__:10s} first call {first * 1e3:8.1f} ms, then {min(ts) * 1e3:8.3f} ms (NumPy inputs)"
        if hasattr(lk, "to_device"):
            dev = tuple(lk.to_device(x) for x in args)
            d(*dev)
            ts = []
            for _ in range(10):
                t = time.perf_counter()
                d(*dev)
                ts.append(time.perf_counter() - t)
            line += f", {min(ts) * 1e6:8.1f} us (device arrays)"
        print(line)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small inputs only")
    ap.add_argument("--save-cuda", metavar="DIR", help="write each function's inspect_cuda source there")
    opts = ap.parse_args()
    available = lk._lorikeet.backend_available("gpu")
    if available is not True:
        print(f"the gpu backend is not available here: {available[1]}")
        return 2
    if opts.save_cuda:
        os.makedirs(opts.save_cuda, exist_ok=True)
        for i, (fn, args) in enumerate(corpus(True)):
            with open(os.path.join(opts.save_cuda, f"{i:03d}_{getattr(fn, '__name__', 'f')}.cu"), "w") as f:
                f.write(lk.jit(fn).inspect_cuda(*args))
    try:
        bad = probe(opts.quick)
        timings()
    except Exception:  # noqa: BLE001 - a probe reports, it does not hide
        traceback.print_exc()
        return 1
    print(f"{bad} function(s) differ between the gpu and cpu backends")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
