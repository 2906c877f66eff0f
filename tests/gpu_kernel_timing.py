"""Times kernels of inspect_cuda's CUDA C on a GPU, alone: generate the sources anywhere (--make DIR: one .cu per
case, with the case's sizes), then on the GPU host (--run DIR) each kernel is compiled by NVRTC through CuPy and
launched through the driver API with its parameter block filled as kernel_abi.h lays it out and the grid that
rt_gpu_launch would pick (RT_LAUNCH_REDUCE: at most 4 blocks an SM; RT_LAUNCH_ELEMENTS: one item a thread), and
checked against NumPy. Prints the median time of a launch over 30 back to back, after warm-ups. This measures the
kernels only: the wall clock of a call (dispatch, sync) is benchmarks/gpu.py's."""
import json
import os
import sys

import numpy as np

try:
    import lorikeet as lk
except ImportError:  # on the GPU host: only --run, which needs no lorikeet
    lk = None

def sum_(a): return np.sum(a)
def max_(a): return np.max(a)
def argmax_(a): return np.argmax(a)
def cumsum_(a): return np.cumsum(a)
def cumprod_(a): return np.cumprod(a)
def scan_fn_(a): return lk.scan(lambda x, y: y if y != 0 else x, a)      # the last non-zero: associative,
def reduce_fn_(a): return lk.reduce(lambda x, y: y if y != 0 else x, a)  # not commutative


CASES = {  # name: (function, dtype, n)
    "sum_f64": (sum_, "float64", 10_000_000),
    "sum_f32": (sum_, "float32", 10_000_000),
    "sum_i64": (sum_, "int64", 10_000_000),
    "max_f64": (max_, "float64", 10_000_000),
    "argmax_f64": (argmax_, "float64", 10_000_000),
    "cumsum_f64": (cumsum_, "float64", 10_000_000),
    "cumsum_f32": (cumsum_, "float32", 10_000_000),
    "cumsum_i32": (cumsum_, "int32", 10_000_000),
    "cumprod_f64": (cumprod_, "float64", 1_000_000),
    "scan_fn_i64": (scan_fn_, "int64", 10_000_000),
    "reduce_fn_i64": (reduce_fn_, "int64", 10_000_000),
}


def make(dirname):
    os.makedirs(dirname, exist_ok=True)
    for name, (fn, dt, n) in CASES.items():
        code = lk.jit(fn).inspect_cuda(np.ones(16, dtype=dt))
        with open(os.path.join(dirname, name + ".cu"), "w") as fh:
            fh.write(code)
        with open(os.path.join(dirname, name + ".json"), "w") as fh:
            json.dump({"dtype": dt, "n": n}, fh)


def parse_layout(line):
    out = {}
    for part in line.split()[2:-1]:
        key, _, value = part.partition("=")
        if key not in ("arg", "in", "uses"):
            out[key] = int(value)
        elif key == "in":
            out[key] = [int(v) for v in value.split(",") if v]
    return out


def run(dirname):
    import cupy as cp
    import ctypes
    from cuda.bindings import driver as cu
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    for fname in sorted(os.listdir(dirname)):
        if not fname.endswith(".cu"):
            continue
        name = fname[:-3]
        meta = json.load(open(os.path.join(dirname, name + ".json")))
        src = open(os.path.join(dirname, fname)).read()
        lays = [parse_layout(l) for l in src.splitlines() if l.startswith("/* layout:")]
        k = len(lays) - 1
        lay = lays[k]
        mod = cp.RawModule(code=src, options=("--std=c++17", "--fmad=false"))
        fn = mod.get_function("lk_k%d" % k)
        fn.attributes  # compiles and loads the module
        n, dt = meta["n"], np.dtype(meta["dtype"])
        rng = np.random.default_rng(1)
        if dt.kind == "f":
            host = (rng.random(n) + (0.5 if "prod" in name else 0.0)).astype(dt)
            if "prod" in name:
                host = (1 + (rng.random(n) - 0.5) * 1e-6).astype(dt)
        else:
            host = rng.integers(-3, 4, n).astype(dt)
        a = cp.asarray(host)
        is_scan = "out" in lay and lay["out"] >= 0
        out = cp.zeros(n, dtype=np.float64 if dt.kind == "f" and dt.itemsize == 8 else
                       (dt if dt.kind == "f" else np.int64)) if is_scan else None
        err = cp.zeros(64, dtype=cp.uint8)
        err.view(cp.uint64)[5] = np.iinfo(np.uint64).max
        scratch = cp.zeros(1 << 16, dtype=cp.uint8)
        slots = np.zeros(lay["nslots"], dtype=np.int64)
        slots[0], slots[1] = err.data.ptr, scratch.data.ptr
        slots[lay["n"]] = n
        slots[lay["dims"]] = n
        if lay.get("flat_ok", -1) >= 0:
            slots[lay["flat_ok"]] = 1
        slots[lay["in"][0]], slots[lay["in"][0] + 1] = a.data.ptr, a.strides[0]
        if is_scan:
            slots[lay["out"]], slots[lay["out"] + 1] = out.data.ptr, out.strides[0]
        reduce_kind = not is_scan or lay.get("chunked", 0)
        blocks = (n + 255) // 256
        grid = max(1, min(blocks, min(4 * sms, 1024))) if reduce_kind else max(1, min(blocks, 1024 * sms))
        if is_scan and not lay.get("chunked", 0):
            slots[lay["n"]] = 1
            grid = 1
        block = (ctypes.c_int64 * len(slots))(*[int(x) for x in slots])
        params = (ctypes.c_void_p * 1)(ctypes.addressof(block))
        stream = cp.cuda.get_current_stream()

        fptr = fn.kernel.ptr if hasattr(fn, "kernel") else fn.ptr
        handle = cu.CUfunction(fptr)
        st = cu.CUstream(stream.ptr)

        def launch():
            r = cu.cuLaunchKernel(handle, grid, 1, 1, 256, 1, 1, 0, st, ctypes.addressof(params), 0)
            assert r[0] == cu.CUresult.CUDA_SUCCESS, r
        reps = 3 if grid == 1 else 30
        for _ in range(2):
            launch()
        stream.synchronize()
        times = []
        for _ in range(reps):
            s, e = cp.cuda.Event(), cp.cuda.Event()
            s.record(stream)
            launch()
            e.record(stream)
            e.synchronize()
            times.append(cp.cuda.get_elapsed_time(s, e) * 1000)
        status = int(err[:4].view(cp.int32)[0])
        ticket = int(scratch[:8].view(cp.uint32).sum())
        flags = int(scratch[17408:17408 + 4096].view(cp.uint32).sum())
        res = scratch[16:24].view(cp.int64).get()[0]
        check = ""
        if is_scan:
            env = {"np": np}
            want = np.cumsum(host) if "cumsum" in name else np.cumprod(host) if "cumprod" in name else None
            if want is None:  # the last non-zero so far
                at = np.maximum.accumulate(np.where(host != 0, np.arange(n), 0))
                want = host[at]
            got = out.get()
            check = "max rel err %.2e" % float(np.max(np.abs(got - want) / np.maximum(np.abs(want), 1))) if dt.kind == "f" \
                else "exact %s" % bool(np.array_equal(got, want))
            # determinism: run again, same bits
            first = got.copy()
            launch()
            stream.synchronize()
            check += " same bits %s" % bool(np.array_equal(first.view(np.uint8), out.get().view(np.uint8)))
        else:
            if "argmax" in name:
                got, want = res, np.argmax(host)
            elif "reduce_fn" in name:
                got, want = res, host[np.nonzero(host)[0][-1]]
            elif dt.kind == "f":
                got, want = np.array(res).view(np.float64), (np.max(host) if "max" in name else np.sum(host, dtype=np.float64))
            else:
                got, want = res, host.sum()
            check = "got %r want %r" % (got, want)
        gbs = (n * dt.itemsize * (2 if is_scan else 1)) / (np.median(times) * 1e-6) / 1e9
        print("%-14s n=%d grid=%d median %.1f us (min %.1f) %.0f GB/s status=%d scratch_left=%d/%d %s" %
              (name, n, grid, np.median(times), min(times), gbs, status, ticket, flags, check), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "--make":
        make(sys.argv[2])
    else:
        run(sys.argv[2])
