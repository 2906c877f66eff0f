"""Elementwise results do not depend on the backend, the thread count or the CPU's vector width: a map of a math
function gives the same bits on cpu and on openmp with 1, 2, 3 and 16 threads, each element the same as the
function called on that element alone in scalar code; and LORIKEET_CPU compiles for a named x86-64 level, the
same bits again where the level uses the same vector math, or says why it cannot. float16 arithmetic and
conversions give the same bits on every level (F16C's instructions, or the runtime's conversion routines where a
level lacks them)."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import lorikeet as lk
from helpers import skip_on_gpu

# 300_001: odd, so every chunk of the team and the whole loop end in a scalar remainder
N = 300_001
RNG = np.random.default_rng(11)
X = RNG.uniform(0.01, 3.0, N)
Y = RNG.uniform(0.01, 3.0, N)

UNARY = ["exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan", "arcsin", "arctan", "sinh",
         "cosh", "tanh", "arcsinh", "cbrt", "exp2"]
BINARY = ["arctan2", "hypot", "power"]


def unary_map(name):
    fn = getattr(np, name)
    if name == "arcsin":
        return lambda a: fn(a / 4.0)
    return lambda a: fn(a)


def binary_map(name):
    fn = getattr(np, name)
    return lambda a, b: fn(a, b)


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize])


def assert_same_bits(got, want, what):
    diff = np.flatnonzero(bits(got) != bits(want))
    assert diff.size == 0, f"{what}: {diff.size} elements differ, first at {diff[:5]}: {got[diff[:3]]} vs {want[diff[:3]]}"


def across_threads(kernel, *args):
    """The kernel on cpu, then on openmp with 1, 2, 3 and 16 threads and every loop on the team."""
    cpu = lk.jit(kernel, backend="cpu")(*args)
    omp = lk.jit(kernel, backend="openmp")
    old_threads, old_threshold = lk.get_num_threads(), lk.get_parallel_threshold()
    try:
        lk.set_parallel_threshold(0)
        for threads in (1, 2, 3, 16):
            lk.set_num_threads(threads)
            yield threads, cpu, omp(*args)
    finally:
        lk.set_num_threads(old_threads)
        lk.set_parallel_threshold(old_threshold)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
@pytest.mark.parametrize("name", UNARY)
def test_unary_map_same_bits_on_every_thread_count(name, dtype):
    x = X.astype(dtype)
    for threads, cpu, omp in across_threads(unary_map(name), x):
        assert_same_bits(omp, cpu, f"np.{name} on {threads} threads")


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
@pytest.mark.parametrize("name", BINARY)
def test_binary_map_same_bits_on_every_thread_count(name, dtype):
    x, y = X.astype(dtype), Y.astype(dtype)
    for threads, cpu, omp in across_threads(binary_map(name), x, y):
        assert_same_bits(omp, cpu, f"np.{name} on {threads} threads")


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16])
def test_scalar_code_computes_what_the_vector_loop_computes(dtype):
    skip_on_gpu("the map runs on the device with CUDA's math functions, the scalar call on the host with libmvec's: each within a few ulp, not the same bits")
    """An element computed in a vectorised loop, in its remainder, and by scalar code: the same bits."""
    mapped = lk.jit(lambda a: np.exp(a) * np.log1p(a))
    one = lk.jit(lambda v: np.exp(v) * np.log1p(v))
    x = X[:1003].astype(dtype)
    whole = mapped(x)
    for k in list(range(0, 1003, 97)) + [1000, 1001, 1002]:
        assert_same_bits(np.array([one(x[k])], dtype), whole[k:k + 1], f"element {k}")
        assert_same_bits(mapped(x[k:k + 1]), whole[k:k + 1], f"a 1-element map of element {k}")


def test_math_results_stay_close_to_numpy():
    """The vector functions are accurate: within 4 ulp of NumPy's (which uses its own SIMD code)."""
    for name in UNARY:
        got = lk.jit(unary_map(name))(X)
        np.testing.assert_array_max_ulp(got, unary_map(name)(X), maxulp=4)


def run_with_cpu(level, code, tmp_path):
    """code in a fresh process (from a file: lorikeet reads the source of what it compiles) with LORIKEET_CPU."""
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(code))
    env = dict(os.environ, LORIKEET_CPU=level, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)


SAVE_MAP = """
    import numpy as np, lorikeet as lk
    x = np.random.default_rng(11).uniform(0.01, 3.0, 100_003)
    f = lk.jit(lambda a: np.exp(a) * np.sin(a) + np.log1p(a) ** 1.5, backend="{backend}")
    np.save("{path}", f(x))
"""


def host_has(flag):
    try:
        with open("/proc/cpuinfo") as f:
            return any(flag in line.split() for line in f if line.startswith("flags"))
    except OSError:
        return False


@pytest.mark.skipif(not (host_has("avx2") and host_has("fma")), reason="x86-64-v3 needs AVX2 and FMA")
def test_a_narrower_level_gives_the_hosts_bits(tmp_path):
    """The host (AVX-512 or not) and x86-64-v3 use the same AVX2 vector math: the same bits."""
    results = {}
    for level in ("host", "x86-64-v3"):
        path = tmp_path / f"{level}.npy"
        r = run_with_cpu(level, SAVE_MAP.format(backend="cpu", path=path), tmp_path)
        assert r.returncode == 0, r.stderr
        results[level] = np.load(path)
    assert_same_bits(results["x86-64-v3"], results["host"], "x86-64-v3 against the host")


@pytest.mark.parametrize("level", ["x86-64", "x86-64-v2"])
def test_every_level_runs_and_agrees_across_backends(tmp_path, level):
    out = {}
    for backend in ("cpu", "openmp"):
        path = tmp_path / f"{backend}.npy"
        r = run_with_cpu(level, SAVE_MAP.format(backend=backend, path=path), tmp_path)
        assert r.returncode == 0, r.stderr
        out[backend] = np.load(path)
    assert_same_bits(out["openmp"], out["cpu"], f"{level}: openmp against cpu")
    x = np.random.default_rng(11).uniform(0.01, 3.0, 100_003)
    np.testing.assert_allclose(out["cpu"], np.exp(x) * np.sin(x) + np.log1p(x) ** 1.5, rtol=1e-14)


SAVE_HALF = """
    import numpy as np, lorikeet as lk
    rng = np.random.default_rng(11)
    a, b, c = (rng.uniform(-300, 300, 100_003).astype(np.float16) for _ in range(3))
    wide = rng.standard_normal(100_003) * 2.0 ** rng.integers(-30, 18, 100_003)
    every = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    f = lk.jit(lambda a, b, c, w, e: (a * b + c, (a - b) / (c + 1.5), a // b, np.sqrt(abs(a)), a < b,
                                      w.astype(np.float16), w.astype(np.float32).astype(np.float16),
                                      e.astype(np.float32), e.astype(np.float64), (w > 0).astype(np.float16),
                                      (w * 1000).astype(np.int32).astype(np.float16)), backend="{backend}")
    np.savez("{path}", *f(a, b, c, wide, every))
"""


@pytest.mark.parametrize("level", ["x86-64", "x86-64-v2"])
def test_float16_gives_the_hosts_bits_on_every_level(tmp_path, level):
    """Without F16C, LLVM calls conversion routines (the runtime's) where the host uses vcvtph2ps/vcvtps2ph: the
    same bits, NaN payloads included, on both backends."""
    def run(lvl, backend):
        path = tmp_path / f"{lvl}-{backend}.npz"
        r = run_with_cpu(lvl, SAVE_HALF.format(backend=backend, path=path), tmp_path)
        assert r.returncode == 0, r.stderr
        with np.load(path) as z:
            return [z[k] for k in sorted(z.files, key=lambda k: int(k.split("_")[1]))]
    host = run("host", "cpu")
    for backend in ("cpu", "openmp"):
        for i, (got, want) in enumerate(zip(run(level, backend), host)):
            assert_same_bits(got, want, f"{level} {backend}: result {i}")


def refusal(level, tmp_path):
    """What the first compilation says in a fresh process with LORIKEET_CPU=level ("" when it compiled)."""
    r = run_with_cpu(level, """
        import numpy as np, lorikeet as lk
        try:
            lk.jit(lambda a: a + 1)(np.ones(3))
        except lk.BackendUnavailable as e:
            print("refused:", e)
    """, tmp_path)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_an_unknown_target_is_refused_by_name(tmp_path):
    said = refusal("pentium-9000", tmp_path)
    assert "refused:" in said and "LORIKEET_CPU=pentium-9000" in said and "x86-64-v3" in said


@pytest.mark.skipif(host_has("avx512f"), reason="this machine runs x86-64-v4: no level to refuse")
def test_a_level_this_machine_cannot_run_is_refused(tmp_path):
    said = refusal("x86-64-v4", tmp_path)
    assert "refused:" in said and "lacks" in said
