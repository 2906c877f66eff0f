"""inspect_types (typed IR text) and inspect_llvm (optimised LLVM IR): types are shown; the hypot loop and the
array expression vectorise; fastmath only where asked; inspecting does not disturb calling."""
import math
import re

import numpy as np
import pytest

import lorikeet as lk
from helpers import skip_on_gpu

VECTOR_DOUBLE = re.compile(r"<(2|4|8) x double>")
VECTOR_ARITH = re.compile(r"= (fmul|fadd)( [a-z ]+)? <(2|4|8) x double>")
# an IndexError written into the error record: status LK_ERR_INDEX (3) then code RT_ERR_INDEX (1), stored
# together as a vector or the status alone (runtime.h)
INDEX_ERROR_RECORD = re.compile(r"store (<4 x i32> <i32 3, i32 1,|i32 3, ptr)")
VECTOR_SQRT = re.compile(r"@llvm\.sqrt\.v(2|4|8)f64")


def hypot_loop(out, a, b):
    for i in range(len(out)):
        out[i] = math.sqrt(a[i] * a[i] + b[i] * b[i])


def hypot_alloc_loop(a, b):
    out = np.empty_like(a)
    for i in range(len(out)):
        out[i] = math.sqrt(a[i] * a[i] + b[i] * b[i])
    return out


def hypot_expr(a, b):
    return np.sqrt(a * a + b * b)


def mixed(x, n, a):
    s = x
    for i in range(n):
        s += a[i, 0] * 0.5
    return s, n // 2, a.T, a > 0.0


def int32_work(a, k):
    return a * k + a


A = np.linspace(0.0, 1.0, 64)
B = np.linspace(1.0, 2.0, 64)


def cpu_has(flag):
    try:
        with open("/proc/cpuinfo") as fh:
            return flag in fh.read().split()
    except OSError:
        return False


# ---------------------------------------------------------------- inspect_types


def test_inspect_types_shows_argument_and_value_types():
    f = lk.jit(mixed)
    text = f.inspect_types(1.5, 3, A.reshape(8, 8))
    assert isinstance(text, str) and text.strip()
    assert "mixed" in text
    assert "float64" in text and "int64" in text
    assert "bool" in text  # a > 0.0 is a bool array
    assert re.search(r"array\(float64, 2d", text) or "float64[:, :]" in text or "2d" in text


def test_inspect_types_depends_on_the_signature():
    f = lk.jit(int32_work)
    t32 = f.inspect_types(np.arange(4, dtype=np.int32), 2)
    tf32 = f.inspect_types(np.arange(4, dtype=np.float32), 2)
    assert "int32" in t32 and "float32" not in t32
    assert "float32" in tf32
    # NEP 50: int32 array * a Python int argument stays int32 in NumPy; the typed IR must say what lorikeet computes
    r = f(np.arange(4, dtype=np.int32), 2)
    assert str(r.dtype) in t32


def test_inspect_types_of_a_strided_argument_differs_from_contiguous():
    f = lk.jit(hypot_expr)
    contiguous = f.inspect_types(A, B)
    strided = f.inspect_types(A[::2], B[::-2])
    assert "float64" in contiguous and "float64" in strided
    assert contiguous != strided


def test_inspect_types_shows_data_parallel_nodes():
    text = lk.jit(hypot_expr).inspect_types(A, B)
    assert "map" in text.lower()
    text = lk.jit(lambda_free_sum).inspect_types(A)
    assert "reduce" in text.lower()


def lambda_free_sum(a):
    return (a * 2.0).sum()


def test_inspecting_does_not_disturb_calls():
    f = lk.jit(hypot_alloc_loop)
    f.inspect_types(A, B)
    f.inspect_llvm(A, B)
    np.testing.assert_allclose(f(A, B), hypot_alloc_loop(A, B), rtol=1e-15)
    f.inspect_llvm(A[::2], B[::2])
    np.testing.assert_allclose(f(A[::2], B[::2]), hypot_alloc_loop(A[::2], B[::2]), rtol=1e-15)


def test_inspect_of_a_function_that_does_not_compile_raises_compile_error():
    def bad(x):
        return {x: 1}

    with pytest.raises(lk.CompileError):
        lk.jit(bad).inspect_types(1)


# ---------------------------------------------------------------- inspect_llvm


def test_inspect_llvm_is_llvm_ir():
    skip_on_gpu("inspect_llvm of a gpu function shows its host code; its kernels are CUDA C (tests/test_gpu_codegen.py)")
    text = lk.jit(hypot_expr).inspect_llvm(A, B)
    assert isinstance(text, str)
    assert "define" in text
    assert "double" in text


@pytest.mark.parametrize("f,args", [(hypot_loop, (np.empty(64), A, B)), (hypot_alloc_loop, (A, B)),
                                    (hypot_expr, (A, B))],
                         ids=["loop_into_out", "loop_alloc", "array_expression"])
def test_hypot_vectorises(f, args):
    skip_on_gpu("inspect_llvm of a gpu function shows its host code; its kernels are CUDA C (tests/test_gpu_codegen.py)")
    text = lk.jit(f).inspect_llvm(*args)
    assert VECTOR_DOUBLE.search(text), "no <N x double> in the optimised LLVM IR"
    assert VECTOR_ARITH.search(text), "no vector fmul/fadd on doubles"
    assert VECTOR_SQRT.search(text), "the sqrt is not vectorised (no llvm.sqrt.vNf64)"


def test_vector_width_matches_the_host():
    skip_on_gpu("inspect_llvm of a gpu function shows its host code; its kernels are CUDA C (tests/test_gpu_codegen.py)")
    text = lk.jit(hypot_expr).inspect_llvm(A, B)
    widths = {int(w) for w in re.findall(r"<(\d+) x double>", text)}
    if cpu_has("avx2") or cpu_has("avx512f"):
        assert max(widths) >= 4, f"AVX2/AVX-512 host but only {sorted(widths)}-wide double vectors"
    else:
        assert max(widths) >= 2


def exp_of_negative(a):
    return np.exp(-a) * np.log1p(a)


def has_libmvec():
    import ctypes
    try:
        ctypes.CDLL("libmvec.so.1")
        return True
    except OSError:
        return False


@pytest.mark.skipif(not has_libmvec(), reason="the C library has no libmvec: math calls stay scalar")
def test_transcendental_functions_call_vector_variants():
    skip_on_gpu("inspect_llvm of a gpu function shows its host code; its kernels are CUDA C (tests/test_gpu_codegen.py)")
    """exp and log1p in a map become libmvec's vector functions (_ZGV<isa>N<lanes>v_exp), not one call per element."""
    text = lk.jit(exp_of_negative).inspect_llvm(A)
    assert re.search(r"call <\d+ x double> @_ZGV[bcde]N\d+v_exp\(", text), "exp is not vectorised"
    assert re.search(r"call <\d+ x double> @_ZGV[bcde]N\d+v_log1p\(", text), "log1p is not vectorised"


def test_fastmath_flags_only_when_asked():
    skip_on_gpu("inspect_llvm of a gpu function shows its host code; its kernels are CUDA C (tests/test_gpu_codegen.py)")
    plain = lk.jit(hypot_expr).inspect_llvm(A, B)
    fast = lk.jit(hypot_expr, fastmath=True).inspect_llvm(A, B)
    flags = re.compile(r"\b(fmul|fadd|fsub|fdiv) (fast|reassoc|nnan|ninf|nsz|arcp|contract|afn)\b")
    assert not flags.search(plain), "fast-math flags without fastmath=True"
    assert flags.search(fast), "fastmath=True gives no fast-math flags"


def reduce_loop(a):
    s = 0.0
    for i in range(len(a)):
        s += a[i]
    return s


def test_float_sum_loop_is_not_reassociated_without_fastmath():
    # IEEE by default: a sequential float sum must give CPython's sequential result bit for bit
    x = np.random.default_rng(5).standard_normal(1001) * 1e3
    text = lk.jit(reduce_loop).inspect_llvm(x)
    assert not re.search(r"\b(reassoc|fast)\b", text)
    assert lk.jit(reduce_loop)(x) == reduce_loop(x)


def test_proven_safe_loop_has_no_bounds_check_branch():
    # for i in range(len(a)): a[i] -- the compiler removes the checks it can prove safe, so the loop vectorises
    def scale(a):
        for i in range(len(a)):
            a[i] = a[i] * 3.0

    text = lk.jit(scale).inspect_llvm(A.copy())
    assert VECTOR_DOUBLE.search(text)


def conv_loops(x, w):
    out = np.empty((x.shape[0] - 2, x.shape[1] - 2))
    for i in range(x.shape[0] - 2):
        for j in range(x.shape[1] - 2):
            s = 0.0
            for di in range(3):
                for dj in range(3):
                    s += x[i + di, j + dj] * w[di, dj]
            out[i, j] = s
    return out


def test_checked_index_loops_vectorise_behind_one_bounds_test():
    # one test before the loops proves every access of conv's loops in range (loop versioning): that copy of the
    # loops has no checks and vectorises; the checked copy remains, for inputs that fail the test
    skip_on_gpu("inspect_llvm of a gpu function shows its host code; its kernels are CUDA C (tests/test_gpu_codegen.py)")
    x, w = np.ones((20, 20)), np.ones((3, 3))
    text = lk.jit(conv_loops).inspect_llvm(x, w)
    assert VECTOR_ARITH.search(text), "no vector fmul/fadd on doubles: the checked loop is all there is"
    assert INDEX_ERROR_RECORD.search(text), "the checked copy of the loops is gone"
    same = lk.jit(conv_loops)(x, w)
    assert same.shape == (18, 18) and (same == 9.0).all()


def plain_loop_ids(text):
    """The loop ids of the optimised IR whose three properties are vectorize.width 1, interleave.count 1 and
    unroll.disable: the loops of a versioned if's general arm."""
    md = dict(re.findall(r"^(![0-9]+) = (.*)$", text, re.M))
    want = {'!{!"llvm.loop.vectorize.width", i32 1}', '!{!"llvm.loop.interleave.count", i32 1}',
            '!{!"llvm.loop.unroll.disable"}'}
    ids = []
    for name, body in md.items():
        m = re.fullmatch(r"distinct !\{(![0-9]+)((, ![0-9]+)*)\}", body)
        if m and m.group(1) == name and {md.get(op) for op in m.group(2).split(", ")[1:]} == want:
            ids.append(name)
    return ids


def conv_loops_wrapping(x, w):
    # x[i - 1] at i = 0 reads the last row, as Python's index does: the versioned loops' test fails on every input
    out = np.empty((x.shape[0], x.shape[1] - 2))
    for i in range(x.shape[0]):
        for j in range(x.shape[1] - 2):
            s = 0.0
            for dj in range(3):
                s += x[i - 1, j + dj] * w[dj]
            out[i, j] = s
    return out


def test_the_checked_copy_of_versioned_loops_is_compiled_plain():
    # the copy for inputs that fail the test is not vectorised, interleaved or unrolled: it halved nothing of the
    # time of the inputs that take it (they are checked element by element) but cost a third of the compile time
    skip_on_gpu("inspect_llvm of a gpu function shows its host code; its kernels are CUDA C (tests/test_gpu_codegen.py)")
    x, w = np.ones((20, 20)), np.ones(3)
    text = lk.jit(conv_loops).inspect_llvm(x, np.ones((3, 3)))
    assert VECTOR_ARITH.search(text), "the proven copy no longer vectorises"
    assert plain_loop_ids(text), "no loop of the checked copy is marked plain"
    plain_only = lk.jit(conv_loops_wrapping)
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((9, 7)), rng.standard_normal(3)
    np.testing.assert_allclose(plain_only(x, w), conv_loops_wrapping(x, w), rtol=1e-15, atol=0)


def every_intrinsic(a, b, m):
    t = a.T                                  # transpose
    r = a.reshape(-1)                        # reshape
    c = np.concatenate((r, r))               # concatenate
    p = a @ b                                # matmul
    s = a[m]                                 # mask_select
    return t, c, p, s


@pytest.mark.parametrize("name", ["transpose", "reshape", "concatenate", "matmul", "mask_select"])
def test_intrinsics_print_their_names(name):
    # the IR names each intrinsic; a gpu backend's author reads it, and tests compare it
    a, b = np.arange(6.0).reshape(2, 3), np.ones((3, 2))
    m = a > 2.0
    f = lk.jit(every_intrinsic)
    assert re.search(rf"\b{name}\(", f.inspect_types(a, b, m)), f.inspect_types(a, b, m)
    t, c, p, s = f(a, b, m)
    np.testing.assert_array_equal(t, a.T)
    np.testing.assert_array_equal(c, np.concatenate((a.ravel(), a.ravel())))
    np.testing.assert_allclose(p, a @ b)
    np.testing.assert_array_equal(s, a[m])


def sum_of_squares_in_loop(image, n):
    s = 0.0
    for t in range(n):
        d = image[1, 2, :] - image[3, 4, :]
        s += np.sum(d ** 2)
    return s


def squares(a):
    return a ** 2


def test_square_is_a_multiply_not_a_pow_call():
    # x ** 2 is x * x (exact: the square is rounded once either way); a pow call per element made growcut's
    # np.sum(d ** 2) 40x slower
    skip_on_gpu("inspect_llvm of a gpu function shows its host code; its kernels are CUDA C (tests/test_gpu_codegen.py)")
    img = np.random.default_rng(0).random((6, 6, 3))
    llvm = lk.jit(sum_of_squares_in_loop).inspect_llvm(img, 3)
    assert "pow" not in llvm, llvm


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_square_equals_numpy_on_specials(dtype):
    a = np.array([0.0, -0.0, 1.5, -3.25, np.inf, -np.inf, np.nan, 1e200, -1e200, 1e-200, 3e38, 7e4, 1e-8,
                  0.1, 1 / 3], dtype=np.float64).astype(dtype)
    got = lk.jit(squares)(a)
    want = a ** 2
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    for x in a[:8]:
        np.testing.assert_array_equal(lk.jit(squares)(x), x ** 2)
    assert lk.jit(squares)(float(a[3])) == float(a[3]) ** 2
