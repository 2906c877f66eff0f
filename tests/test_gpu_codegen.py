"""The gpu backend's CUDA C, without a GPU: f.inspect_cuda(*args) for a broad corpus (every specialisation that
test_language.py and test_scalar_semantics.py run, recorded by gpu_corpus_plugin; examples/ and the benchmarks'
kernels; reductions of every op and dtype, axis reductions, scans, pranges, imaps, comprehensions, user callees)
compiled with NVRTC for sm_90 and sm_80, as the gpu backend compiles it (--std=c++17 --fmad=false, no include
path). What the emitter refuses must be a CompileError saying so, and only the refusals listed here. NVRTC runs on
machines with no GPU; where it is absent the compiling tests skip with the reason."""
import ctypes
import importlib
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import lorikeet as lk
from helpers import prange_reductions

ROOT = os.path.join(os.path.dirname(__file__), "..")
ARCHS = ("sm_90", "sm_80")
MARK = "/* ---- end of the preamble ---- */\n"


def load_nvrtc():
    for name in ("/usr/local/cuda/lib64/libnvrtc.so.13", "libnvrtc.so.13", "libnvrtc.so.12"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


NVRTC = load_nvrtc()
needs_nvrtc = pytest.mark.skipif(NVRTC is None, reason="no NVRTC (libnvrtc.so.13 or .12) on this machine")


def nvrtc_compile(src, arch):
    """(ok, log) of NVRTC compiling src to a cubin for arch."""
    prog = ctypes.c_void_p()
    assert NVRTC.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), b"lorikeet.cu", 0, None, None) == 0
    opts = [f"--gpu-architecture={arch}".encode(), b"--std=c++17", b"--fmad=false"]
    rc = NVRTC.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    size = ctypes.c_size_t()
    NVRTC.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value + 1)
    NVRTC.nvrtcGetProgramLog(prog, log)
    NVRTC.nvrtcDestroyProgram(ctypes.byref(prog))
    return rc == 0, log.value.decode(errors="replace")


def compile_all(sources, arch, chunk=60):
    """Every source compiled (many to one NVRTC program: each in a namespace of its own, its kernels renamed);
    returns the failures as (source, log), found one by one in a chunk that failed."""
    failures = []
    for i in range(0, len(sources), chunk):
        part = sources[i:i + chunk]
        text = [part[0][:part[0].index(MARK) + len(MARK)]]
        for j, s in enumerate(part):
            body = re.sub(r"\blk_k(\d+)\(", lambda m, j=j: f"lk_c{j}_k{m.group(1)}(", s[s.index(MARK) + len(MARK):])
            text.append(f"namespace c{j} {{\n{body}\n}}\n")
        ok, _ = nvrtc_compile("".join(text), arch)
        if not ok:
            for s in part:
                ok1, log = nvrtc_compile(s, arch)
                if not ok1:
                    failures.append((s, log))
    return failures


def check_compiles(sources):
    assert sources
    for src in sources:
        assert not re.search(r"^\s*#\s*include", src, re.M)
    for arch in ARCHS:
        failures = compile_all(sorted(set(sources)), arch)
        assert not failures, f"{len(failures)} sources fail on {arch}; the first:\n{failures[0][1][:3000]}\n" \
                             f"{failures[0][0][-3000:]}"


# ---------------------------------------------------------------- the suite's functions, recorded

# (function name, what the CompileError says): the refusals expected of the recorded corpus.
EXPECTED_REFUSALS = {}
CORPUS_FILES = ["tests/test_language.py", "tests/test_scalar_semantics.py", "tests/test_fusion.py",
                "tests/test_fuse_shared.py", "tests/test_float16.py"]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "corpus.json"
    env = dict(os.environ, LK_GPU_CORPUS=str(path),
               PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "pyshim"), os.path.join(ROOT, "tests")]))
    env.pop("LORIKEET_BACKEND", None)
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "gpu_corpus_plugin", "-p", "no:cacheprovider",
                    *CORPUS_FILES], cwd=ROOT, env=env, capture_output=True, check=False)
    with open(path) as f:
        return json.load(f)


def test_the_recorded_corpus_is_emitted_or_refused_as_listed(recorded):
    ok = [e for e in recorded if e["status"] == "ok"]
    refused = {e["name"]: e["error"] for e in recorded if e["status"] == "refused"}
    errors = [e for e in recorded if e["status"] == "error"]
    print(f"\ngpu codegen corpus: {len(recorded)} specialisations, {len(ok)} emitted, {len(refused)} refused")
    assert len(ok) > 300
    assert not errors, errors[:3]
    for name, msg in refused.items():
        assert name in EXPECTED_REFUSALS, f"a new refusal: {name}: {msg}"
        assert EXPECTED_REFUSALS[name] in msg and "the gpu backend cannot run" in msg


@needs_nvrtc
def test_the_recorded_corpus_compiles_with_nvrtc(recorded):
    check_compiles([e["source"] for e in recorded if e["status"] == "ok"])


# ---------------------------------------------------------------- a corpus of our own


def callee_loop(x, n):
    s = 0.0
    for k in range(n):
        if k % 3 == 2:
            continue
        s += x ** k
    return s


def callee_div(a, b):
    return a // b + a % b


def red_sum(a): return np.sum(a)
def red_prod(a): return np.prod(a)
def red_min(a): return np.min(a)
def red_max(a): return np.max(a)
def red_argmin(a): return np.argmin(a)
def red_argmax(a): return np.argmax(a)
def red_nanmin(a): return np.nanmin(a)
def red_nanmax(a): return np.nanmax(a)
def red_any(a): return np.any(a > 0)
def red_all(a): return np.all(a > 0)
def red_mean(a): return np.mean(a)
def red_fn(a): return lk.reduce(lambda x, y: x + 2 * y, a)
def red_fn_init(a): return lk.reduce(lambda x, y: x * y + 1, a, init=1)
def axis_sum(a): return a.sum(axis=0), a.sum(axis=1)
def axis_max(a): return np.max(a, axis=1), np.min(a, axis=0)
def axis_arg(a): return np.argmax(a, axis=0), np.argmin(a, axis=1)
def axis_fn(a): return lk.reduce(lambda x, y: x - y, a, axis=1)
def scan_sum(a): return np.cumsum(a), np.cumprod(a)
def scan_axis(a): return np.cumsum(a, axis=1), np.cumsum(a, axis=0)
def scan_fn(a): return lk.scan(lambda x, y: max(x, y), a)


def prange_plain(a, out):
    for i in lk.prange(a.shape[0]):
        for j in range(a.shape[1]):
            out[i, j] = a[i, j] * 2 + callee_div(i + 7, j + 1)
    return out


def prange_rows(a, out):
    for i in lk.prange(a.shape[0]):
        out[i, :] = a[i, :] * 2 + a[i, 0]
        out[i, 1:] = out[i, 1:] + np.sum(a[i, :])
    return out


def prange_raise(a, out):
    for i in lk.prange(a.shape[0]):
        if a[i, 0] < 0:
            raise ValueError("negative first column", 3)
        out[i, 0] = a[i, 0]
    return out


def clip_or_raise(v):
    if v < 0:
        raise ValueError("negative in a device function")
    return v * 2


def map_raise(a):
    return lk.map(clip_or_raise, a)


def prange_while(n, out):
    for i in lk.prange(n):
        k = i
        steps = 0
        while k != 1 and k > 0:
            k = k // 2 if k % 2 == 0 else 3 * k + 1
            steps += 1
            if steps > 1000:
                break
        out[i] = steps
    return out


def imap_fill(n, m):
    return lk.imap(lambda i, j: (i * m + j) % 7 - 3.5, (n, m))


def comprehension(x):
    return np.array([[x[i] * x[j] for j in range(len(x))] for i in range(len(x))])


def map_callee(x):
    return np.array([callee_loop(v, 5) for v in x])


def map_views(a):
    return a.T[1:, ::2] + a[None, 0, ::-2] * np.float32(2)


def map_f32(a, b, c):
    return a * b + c


def map_casts(a):
    return a.astype(np.int8), a.astype(np.uint64), (a * 3).astype(np.int32) >> 2, a > 0.5


def map_tuple_callee(a):
    def pair(v):
        return v + 1, v * 2
    return np.array([pair(v)[0] - pair(v)[1] for v in a])


def matmul(a, b):
    return a @ b


def fused_where(a, b):
    return np.where(a > b, np.sqrt(np.abs(a)), np.floor(b)) + np.maximum(a, b) - np.minimum(a, b)


RNG = np.random.default_rng(3)
F64 = RNG.random(12) - 0.3
M64 = RNG.random((4, 6)) - 0.3
DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.float16, np.float32,
          np.float64, np.bool_]

OWN = [(f, (F64.astype(dt),)) for dt in DTYPES for f in (red_sum, red_prod, red_min, red_max, red_argmin, red_argmax,
                                                         red_any, red_all, red_mean)]
OWN += [(f, (F64.astype(dt),)) for dt in (np.float16, np.float32, np.float64) for f in (red_nanmin, red_nanmax)]
OWN += [(f, (F64.astype(dt),)) for dt in (np.int64, np.float64, np.float32, np.float16) for f in (red_fn, red_fn_init,
                                                                                                  scan_sum, scan_fn)]
OWN += [(f, (M64.astype(dt),)) for dt in (np.int32, np.float64, np.float32, np.float16)
        for f in (axis_sum, axis_max, axis_arg, axis_fn, scan_axis)]
OWN += [
    (prange_plain, (M64, np.zeros_like(M64))),
    (prange_reductions, (F64,)),
    (prange_rows, (M64, np.zeros_like(M64))),
    (prange_while, (20, np.zeros(20, dtype=np.int64))),
    (prange_raise, (M64, np.zeros_like(M64))),
    (map_raise, (F64,)),
    (imap_fill, (3, 4)),
    (comprehension, (F64,)),
    (map_callee, (F64,)),
    (map_views, (M64.astype(np.float32),)),
    (map_f32, tuple(RNG.random(8, dtype=np.float32) for _ in range(3))),
    (map_f32, tuple(RNG.random(8).astype(np.float16) for _ in range(3))),
    (prange_reductions, (F64.astype(np.float16),)),
    (map_casts, (F64.astype(np.float16),)),
    (fused_where, (F64.astype(np.float16), F64[::-1].astype(np.float16))),
    (map_casts, (F64,)),
    (map_tuple_callee, (F64,)),
    (matmul, (M64, M64.T.copy())),
    (matmul, (M64.astype(np.float32), M64.T.astype(np.float32))),
    (fused_where, (F64, F64[::-1])),
]


def workload_calls():
    """(function, args) of examples/kernels.py's lorikeet functions and the benchmarks' kernels, small sizes."""
    calls = []
    sys.path.insert(0, ROOT)
    try:
        from benchmarks import spec
        for name in sorted(os.listdir(os.path.join(ROOT, "benchmarks", "workloads"))):
            if not name.endswith(".py") or name.startswith("_"):
                continue
            mod = importlib.import_module(f"benchmarks.workloads.{name[:-3]}")
            for w in vars(mod).values():
                if isinstance(w, spec.Workload):
                    size = 16 if name not in ("mandelbrot.py",) else None
                    try:
                        args = w.make_inputs(size) if size else (16, 16, 20)
                    except Exception:  # noqa: BLE001 - a workload whose inputs need other sizes
                        continue
                    calls.append((w.kernel, tuple(args) if isinstance(args, tuple) else (args,)))
    finally:
        sys.path.remove(ROOT)
    return calls


def own_sources():
    sources = []
    for fn, args in OWN + workload_calls():
        d = fn if isinstance(fn, lk.Dispatcher) else lk.jit(fn)
        sources.append(d.inspect_cuda(*args))
    return sources


@needs_nvrtc
def test_our_corpus_compiles_with_nvrtc():
    sources = own_sources()
    print(f"\nown gpu codegen corpus: {len(sources)} functions")
    check_compiles(sources)


# ---------------------------------------------------------------- the shape of the code


def kernel(src, i):
    """The text of kernel i."""
    start = src.index(f"lk_k{i}(")
    end = src.find("/* kernel", start)
    return src[start:end if end >= 0 else len(src)]


def test_a_map_kernel_is_a_grid_stride_loop_over_the_n_slot():
    src = lk.jit(map_f32).inspect_cuda(*(RNG.random(8, dtype=np.float32) for _ in range(3)))
    k = kernel(src, 0)
    assert "const i64 lk_n = p.s[2];" in k
    # counted in u64 (ptxas is about twice as fast over it), read as the i64 work item lk_w
    assert re.search(r"lk_wu < \(u64\)\(lk_n > 0 \? lk_n : 0\); lk_wu \+= \(u64\)gridDim\.x \* blockDim\.x", k)
    assert "const i64 lk_w = (i64)lk_wu;" in k
    # a short arithmetic body is held to 32 registers, so that 8 blocks of 256 fill an SM
    assert "__launch_bounds__(256, 8) lk_k0" in src


def test_a_map_whose_body_calls_a_function_keeps_the_registers_it_needs():
    src = lk.jit(map_callee).inspect_cuda(RNG.random(8))
    assert "__launch_bounds__(256) lk_k0" in src


def test_a_float32_map_computes_in_float32():
    src = lk.jit(map_f32).inspect_cuda(*(RNG.random(8, dtype=np.float32) for _ in range(3)))
    k = kernel(src, 0)
    assert "f32" in k
    assert "f64" not in k and "double" not in k and "LK_D(" not in k


def test_a_float16_map_moves_16_bits_and_computes_in_float32_with_no_header():
    src = lk.jit(map_f32).inspect_cuda(*(RNG.random(8).astype(np.float16) for _ in range(3)))
    k = kernel(src, 0)
    assert "lk_h2f(*(const u16 *)(lk_in0 + lk_w * 2))" in k  # loaded as 16 bits, widened exactly
    assert re.search(r"f32 t\d+ = lk_rh\(\(v\d+ \* v\d+\)\);", k)  # each operation rounded once
    assert re.search(r"\*\(u16 \*\)\(lk_out \+ lk_w \* 2\) = lk_f2h\(", k)
    assert "__half" not in src and not re.search(r"^\s*#\s*include", src, re.M) and "f64" not in k


def test_a_math_function_of_float32_is_the_float32_one():
    src = lk.jit(lambda a: np.exp(a) * np.float32(0.5)).inspect_cuda(RNG.random(8, dtype=np.float32))
    k = kernel(src, 0)
    assert "expf(" in k and "f64" not in k


def test_a_square_is_a_multiply_not_a_pow_call():
    # pow(x, 2.0) is ~400 lines of PTX that NVRTC does not fold; x * x is the same value (rounded once)
    for dt in (np.float64, np.float32, np.float16):
        k = kernel(lk.jit(lambda a: np.sum(a ** 2)).inspect_cuda(RNG.random(8).astype(dt)), 0)
        assert "lk_sq(" in k and "pow" not in k, k
    k = kernel(lk.jit(lambda a: a ** 3.0).inspect_cuda(RNG.random(8)), 0)
    assert "pow(" in k, k


def test_a_reduction_of_everything_combines_blocks_with_shuffles_and_the_ticket():
    src = lk.jit(red_sum).inspect_cuda(F64)
    k = kernel(src, 0)
    assert "lk_block_reduce(" in k and "lk_last_block(lk_scratch" in k
    assert "*(unsigned *)lk_scratch = 0u;" in k  # the ticket is left zero
    assert "__shfl_down_sync" in src


def test_an_argmax_carries_the_index_and_breaks_ties_by_it():
    k = kernel(lk.jit(red_argmax).inspect_cuda(F64), 0)
    assert "lk_acc.idx = lk_w" in k
    assert "lk_w < lk_acc.idx" in k


def test_integer_division_raises_zero_division_from_the_kernel():
    src = lk.jit(lambda a, b: a // b).inspect_cuda(np.arange(4), np.arange(4))
    k = kernel(src, 0)
    assert re.search(r"if \(\S+ == 0\) \{ lk_raise\(lk_err, lk_order, \d+, 4, ", k)  # RT_ERR_ZERODIV
    assert "lk_floordiv<i64, u64>" in k


def test_a_checked_index_raises_index_error_with_the_line():
    def f(a, idx):
        return np.array([a[i] for i in idx])
    src = lk.jit(f).inspect_cuda(F64, np.arange(3))
    line = f.__code__.co_firstlineno + 1
    assert re.search(rf"lk_raise\(lk_err, lk_order, \d+, 1, {line}, \d+, ", src)  # RT_ERR_INDEX


def test_a_raise_statement_in_a_kernel_writes_the_record_with_its_strings_names():
    src = lk.jit(prange_raise).inspect_cuda(M64, np.zeros_like(M64))
    line = prange_raise.__code__.co_firstlineno + 3
    # RT_ERR_RAISE (12) at the raise's line; its class and arguments are indices of the host's names table
    assert re.search(rf"lk_raise\(lk_err, lk_order, \d+, 12, {line}, \d+, \(i64\)\(\d+\), \(i64\)\(\d+\), ", kernel(src, 0))


def test_a_raise_formatting_its_message_in_a_kernel_is_refused_naming_the_line():
    def f(a):
        for i in lk.prange(a.shape[0]):
            if a[i] < 0:
                raise ValueError(f"negative at {i}")
        return a
    with pytest.raises(lk.CompileError, match="arguments are made at run time") as e:
        lk.jit(f).inspect_cuda(F64)
    assert f"line {f.__code__.co_firstlineno + 3}" in str(e.value)


def test_a_function_without_parallel_regions_has_no_kernel():
    src = lk.jit(lambda x: x * 2 + 1).inspect_cuda(3)
    assert "__global__" not in src and "0 kernels" in src


def test_what_would_allocate_in_a_kernel_is_refused_naming_the_line():
    def f(a):
        s = 0.0
        for i in lk.prange(a.shape[0]):
            row = a[i] * 2
            s += row[0]
        return s
    with pytest.raises(lk.CompileError, match=r"the gpu backend cannot run an allocation of a new array inside a "
                                              r"kernel yet") as e:
        lk.jit(f).inspect_cuda(M64)
    assert f"line {f.__code__.co_firstlineno + 3}\n" in str(e.value)


def test_a_reshape_of_a_strided_array_runs_on_the_host_and_is_refused_in_a_kernel():
    def on_host(a):
        return a[:, ::2].reshape(-1) * 2.0

    def in_kernel(a):
        s = 0.0
        for i in lk.prange(a.shape[0]):
            v = a[:, ::2].reshape(-1)
            s += v[i]
        return s
    src = lk.jit(on_host).inspect_cuda(M64)  # the view or the copy is chosen by the host; the map is a kernel
    assert "__global__" in src
    with pytest.raises(lk.CompileError, match=r"the gpu backend cannot run a reshape or ravel of an array that is "
                                              r"neither C-contiguous nor 1-D") as e:
        lk.jit(in_kernel).inspect_cuda(M64)
    assert f"line {in_kernel.__code__.co_firstlineno + 3}\n" in str(e.value)


def test_a_mask_store_in_a_kernel_is_refused():
    def f(a, out):
        for i in lk.prange(a.shape[0]):
            row = out[i]
            row[a[i] > 0] = 0.0
        return out
    with pytest.raises(lk.CompileError, match="the gpu backend cannot run"):
        lk.jit(f).inspect_cuda(M64, M64.copy())


def test_a_callee_called_from_element_code_is_a_device_function():
    src = lk.jit(map_callee).inspect_cuda(F64)
    assert re.search(r"__device__ int lk_f0\(unsigned char \*lk_err, u64 lk_order, f64 \*lk_ret, f64 a0, i64 a1\)", src)
    assert "if (lk_f0(lk_err, lk_order, &" in src


def test_kernels_are_numbered_in_the_order_of_the_regions():
    def f(a):
        return a * 2, np.sum(a), np.cumsum(a)
    src = lk.jit(f).inspect_cuda(F64)
    assert "kernel 0: the map" in src and "kernel 1: the reduction of everything" in src and "kernel 2: the scan" in src


def in_place(a, b):
    a[:] = a * 2 + b
    return a


def test_inputs_are_restrict_only_where_nothing_the_kernel_writes_can_alias_them():
    fresh = kernel(lk.jit(map_f32).inspect_cuda(*(RNG.random(8, dtype=np.float32) for _ in range(3))), 0)
    assert "const char *__restrict__ lk_in0" in fresh
    src = lk.jit(in_place).inspect_cuda(F64.copy(), F64)
    assert "const char *lk_in0" in src and "__restrict__ lk_in" not in src


def two_products(a, b, c):
    return (a @ b) @ c.T


def test_a_matrix_product_is_the_tiled_kernel_with_its_element_traits():
    src = lk.jit(two_products).inspect_cuda(M64, M64.T.copy(), M64)
    assert src.count("__device__ __forceinline__ void lk_matmul_tiles(") == 1  # the template once per program
    for i in (0, 1):
        assert f"lk_matmul_tiles<lk_k{i}_mm>(" in kernel(src, i)
        assert f"struct lk_k{i}_mm {{\n    typedef f64 acc;" in src
    f32 = lk.jit(matmul).inspect_cuda(M64.astype(np.float32), M64.T.astype(np.float32))
    assert "typedef f32 acc;" in f32 and "__shared__ lk_mm_smem<A> lk_sm;" in f32
    # float32: fused multiply-adds (the kernels are compiled with --fmad=false) and 16-byte loads where they apply
    assert "return fmaf(x, y, s);" in f32 and "static const bool vec = true;" in f32
    assert "return fma(x, y, s);" in src and "static const bool vec = false;" in src


def test_an_integer_product_holds_the_tiled_kernel_with_wrapping_unsigned_traits():
    src = lk.jit(matmul).inspect_cuda(M64.astype(np.int32), M64.T.astype(np.int16))
    assert "kernel 0: the reduction along an axis" in src and "product=" in src
    assert "typedef u32 acc;" in src and "load_b(const char *p) { return (acc)(i32)(*(const i16 *)(p)); }" in src
    assert "if (p.s[" in kernel(src, 0) and "lk_matmul_tiles<lk_k0_mm>(" in kernel(src, 0)
    b = lk.jit(matmul).inspect_cuda(M64 > 0, M64.T > 0)
    assert "return s | (x & y);" in b and "*(u8 *)(p) = (u8)(s != 0u);" in b
    plain = lk.jit(axis_sum).inspect_cuda(M64.astype(np.int32))
    assert "lk_matmul_tiles" not in plain and "product=-1" in plain


@needs_nvrtc
def test_the_tiled_product_compiles_with_nvrtc_for_every_element_type():
    sources = [lk.jit(matmul).inspect_cuda(M64.astype(da), M64.T.astype(db))
               for da, db in ((np.float64, np.float64), (np.float32, np.float32), (np.int32, np.int32),
                              (np.int64, np.int8), (np.uint16, np.uint16), (np.uint64, np.uint64), (np.bool_, np.bool_),
                              (np.float16, np.float16))]
    check_compiles(sources)
# ---------------------------------------------------------------- which kernels can raise (a call waits for those)


def raising(src):
    """{kernel index: whether it may raise}, from the source's `errors:` line (what gpu_emit_cuda decided for
    each kernel, the same flag the runtime reads to decide whether a call waits)."""
    m = re.search(r"/\* errors:(.*) \*/", src)
    assert m, "the CUDA source names which kernels may raise"
    return {int(k): what == "may raise" for k, what in re.findall(r"lk_k(\d+) (may raise|raises nothing)", m.group(1))}


def test_a_map_without_checks_cannot_raise():
    assert raising(lk.jit(lambda x: np.sqrt(x * x + 1.0)).inspect_cuda(F64)) == {0: False}


def test_integer_division_by_a_variable_may_raise_and_by_a_nonzero_constant_cannot():
    i = np.arange(8)
    assert raising(lk.jit(lambda x, y: x // y).inspect_cuda(i, i)) == {0: True}
    assert raising(lk.jit(lambda x, y: x % y).inspect_cuda(i, i)) == {0: True}
    for f in (lambda x: x // 3, lambda x: x % 7, lambda x: x // -2):
        src = lk.jit(f).inspect_cuda(i)
        assert raising(src) == {0: False}
        assert "lk_raise(" not in kernel(src, 0)
    assert raising(lk.jit(lambda x: x // 0).inspect_cuda(i)) == {0: True}


def test_a_zero_constant_of_a_narrow_type_keeps_its_check():
    a = np.arange(8, dtype=np.int8)
    src = lk.jit(lambda x: x // np.int8(0)).inspect_cuda(a)
    assert raising(src) == {0: True}


def proven_loop(x):
    out = np.empty_like(x)
    for k in lk.prange(x.shape[0]):
        out[k] = x[k] * 2.0
    return out


def shifted_loop(x, j):
    out = np.empty_like(x)
    for k in lk.prange(x.shape[0] - j):
        out[k] = x[k + j] * 2.0
    return out


def test_a_loop_whose_bounds_checks_are_proven_has_a_kernel_that_cannot_raise():
    # the loop is versioned (ir/bounds_plan.c): one kernel with every check proven away, launched when the
    # host's test passes, and one that keeps the checks for the other case
    flags = raising(lk.jit(proven_loop).inspect_cuda(F64))
    assert False in flags.values()


def test_an_index_not_proven_keeps_its_check_and_may_raise():
    def f(a, idx):
        return np.array([a[i] for i in idx])
    assert raising(lk.jit(f).inspect_cuda(F64, np.arange(3))) == {0: True}


def test_a_reduction_to_a_scalar_may_raise_and_a_call_of_a_raising_device_function_too():
    assert raising(lk.jit(lambda x: np.max(x)).inspect_cuda(F64)) == {0: True}  # the empty max's ValueError
    src = lk.jit(map_divides).inspect_cuda(np.arange(8), 3)
    assert "lk_raise(lk_err" in src[src.index("__device__ int lk_f0"):src.index("lk_k0(")]
    assert raising(src) == {0: True}


def divide_by(a, b):
    s = 0
    for k in range(2):  # a loop: kept a function of its own (a small body would be inlined)
        s += a // b
    return s


@lk.jit
def map_divides(x, b):
    return np.array([divide_by(v, b) for v in x])
