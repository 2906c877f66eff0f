"""Float matrix products through the BLAS that NumPy loaded (runtime/blas.c): lorikeet makes NumPy's own BLAS
calls, so its products equal NumPy's a @ b bit for bit, for C- and F-ordered operands, transposed and strided
views (copied first where a BLAS cannot take them, as NumPy does), a @ a.T (syrk), and products of a matrix with
one column or row (gemv); the cpu and openmp backends agree bit for bit; with the BLAS off (runtime.blas(False), as
LORIKEET_BLAS=0) lorikeet's own GEMM gives the same within the bound of any summation order; tiny, integer and
float16 products do not call it; the BLAS's thread count is restored after a product.

NumPy is compared with its BLAS on one thread: OpenBLAS's dgemm gives other bits on two threads than on one
(its edge tiles move with the split), and lorikeet's products use one BLAS thread a call on both backends."""
import ctypes

import numpy as np
import pytest

import lorikeet as lk
from helpers import skip_on_gpu
from test_linalg import assert_gemm_close

RNG = np.random.default_rng(2611)


def mm(a, b):
    return a @ b


def mm_dot(a, b):
    return np.dot(a, b)


def info():
    skip_on_gpu("the BLAS is the cpu and openmp backends'")
    i = lk.runtime.blas()
    if i["library"] is None:
        pytest.skip(f"no BLAS: {i['why_not']}")
    return i


class BlasThreads:
    """The BLAS's own thread count, through the names its dgemm's symbol shows (scipy_cblas_dgemm64_:
    scipy_openblas_set_num_threads64_)."""

    def __init__(self, i):
        prefix, _, suffix = i["symbol"].partition("cblas_dgemm")
        lib = ctypes.CDLL(i["library"])
        try:
            self.get = getattr(lib, f"{prefix}openblas_get_num_threads{suffix}")
            self.set = getattr(lib, f"{prefix}openblas_set_num_threads{suffix}")
        except AttributeError:
            pytest.skip("not an OpenBLAS: its thread count is not set here")


@pytest.fixture
def one_thread():
    t = BlasThreads(info())
    before = t.get()
    t.set(1)
    yield t
    t.set(before)


@pytest.fixture
def blas_off():
    lk.runtime.blas(False)
    yield
    lk.runtime.blas(True)


def rand(shape, dtype):
    return RNG.standard_normal(shape).astype(dtype)


def views(m, k, n, dtype):
    """(name, A, B) pairs that reach each of NumPy's paths: plain, transposed (F-ordered), strided rows (lda),
    strided columns (copied), a @ a.T and a.T @ a (syrk)."""
    a, b = rand((m, k), dtype), rand((k, n), dtype)
    a2 = rand((2 * m, 2 * k), dtype)
    sq = rand((m, k), dtype)
    return [("C", a, b), ("F", np.asfortranarray(a), np.asfortranarray(b)), ("transposed", rand((k, m), dtype).T, rand((n, k), dtype).T),
            ("row-strided", a2[::2, :k], b), ("column-strided", a2[:m, ::2], b),
            ("a@a.T", sq, sq.T), ("a.T@a", sq.T, sq)]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("m,k,n", [(64, 64, 64), (300, 200, 250), (131, 67, 257)])
def test_products_equal_numpys_bit_for_bit(one_thread, m, k, n, dtype):
    f = lk.jit(mm)
    calls = lk.runtime.blas()["calls"]
    for name, A, B in views(m, k, n, dtype):
        exp = A @ B
        got = f(A, B)
        assert got.dtype == exp.dtype and got.shape == exp.shape, name
        assert np.array_equal(got, exp), f"{name}: worst error {np.abs(got - exp).max():.3g}"
    assert lk.runtime.blas()["calls"] >= calls + len(views(1, 1, 1, dtype))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cpu_and_openmp_agree_bit_for_bit(one_thread, dtype):
    """The openmp backend splits the rows of C over the team in whole blocks, each a one-thread BLAS call; the
    bits are those of one call on one thread."""
    threads, threshold = lk.get_num_threads(), lk.get_parallel_threshold()
    lk.set_num_threads(3)
    lk.set_parallel_threshold(0)
    try:
        for m, k, n in [(1000, 300, 200), (999, 500, 301), (2000, 40, 40), (800, 17, 999)]:
            a, b, x = rand((m, k), dtype), rand((k, n), dtype), rand(k, dtype)
            for A, B in [(a, b), (np.asfortranarray(a), b), (a, b[:, :1])]:
                cpu = lk.jit(mm, backend="cpu")(A, B)
                omp = lk.jit(mm, backend="openmp")(A, B)
                assert np.array_equal(cpu, omp), f"{A.shape} @ {B.shape}: {np.abs(cpu - omp).max():.3g}"
                assert np.array_equal(cpu, A @ B)
    finally:
        lk.set_num_threads(threads)
        lk.set_parallel_threshold(threshold)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_with_the_blas_off_the_own_gemm_agrees_within_rounding(blas_off, dtype):
    f = lk.jit(mm)
    calls = lk.runtime.blas()["calls"]
    assert lk.runtime.blas()["enabled"] is False
    for name, A, B in views(131, 67, 257, dtype):
        assert_gemm_close(f(A, B), A, B)
    A, x = rand((300, 200), dtype), rand((200, 1), dtype)
    assert_gemm_close(f(A, x), A, x)
    assert_gemm_close(f(x.T, A.T), x.T, A.T)
    assert lk.runtime.blas()["calls"] == calls


def test_info_names_numpys_blas():
    i = info()
    assert i["enabled"] is True and i["why_not"] is None
    assert "cblas_dgemm" in i["symbol"]
    assert i["ilp64"] == ("64" in i["symbol"])
    lib = ctypes.CDLL(i["library"])
    assert hasattr(lib, i["symbol"])


@pytest.mark.parametrize("A,B", [(np.ones((4, 4)), np.ones((4, 4))),  # tiny (below 128 multiply-adds): own path
                                 (np.ones((8, 8)), np.ones(8)),
                                 (np.ones((200, 200), np.int64), np.ones((200, 200), np.int64)),
                                 (np.ones((200, 200), np.float16), np.ones((200, 200), np.float16)),
                                 (np.ones((200, 200), np.float32)[:, :1], np.ones((1, 200), np.float32))])  # k = 1
def test_products_the_blas_does_not_compute(A, B):
    info()
    f = lk.jit(mm)
    f(A, B)
    calls = lk.runtime.blas()["calls"]
    got = f(A, B)
    assert lk.runtime.blas()["calls"] == calls
    np.testing.assert_array_equal(got, A @ B)


def test_the_blas_thread_count_is_restored():
    t = BlasThreads(info())
    before = t.get()
    a = rand((300, 300), np.float64)
    lk.jit(mm)(a, a)
    lk.jit(mm)(a, a[:, :1])
    assert t.get() == before
