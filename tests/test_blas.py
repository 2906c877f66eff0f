"""Float matrix products through the BLAS that NumPy loaded (runtime/blas.c): lorikeet makes NumPy's own BLAS
calls, so its products equal NumPy's a @ b bit for bit, for C- and F-ordered operands, transposed and strided
views (copied first where a BLAS cannot take them, as NumPy does), a @ a.T (syrk), and the matrix-vector
products (A @ x, x @ A, A.T @ y: reductions that the llvm backends hand to gemv); the cpu and openmp backends agree bit for bit; with the BLAS off (runtime.blas(False), as
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


def matvec_then_t(A, x):
    y = A @ x
    return A.T @ y


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
@pytest.mark.parametrize("m,k", [(500, 300), (64, 1000), (1000, 64)])
def test_matrix_vector_products_equal_numpys_bit_for_bit(one_thread, m, k, dtype):
    A, x, y = rand((m, k), dtype), rand(k, dtype), rand(m, dtype)
    B = rand((2 * m, 2 * k), dtype)
    cases = [(A, x), (y, A), (A.T, y), (x, A.T), (np.asfortranarray(A), x), (B[::2, :k], x), (A, B[0, ::2][:k])]
    f, g = lk.jit(mm), lk.jit(mm_dot)
    for a, b in cases:
        exp = a @ b
        for h in (f, g):
            got = h(a, b)
            assert got.shape == exp.shape and got.dtype == exp.dtype
            assert np.array_equal(got, exp), f"{a.shape} @ {b.shape}: {np.abs(got - exp).max():.3g}"


def test_a_product_after_a_product_reads_the_first_exactly(one_thread):
    A, x = rand((700, 400), np.float64), rand(400, np.float64)
    assert np.array_equal(lk.jit(matvec_then_t)(A, x), A.T @ (A @ x))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cpu_and_openmp_agree_bit_for_bit(one_thread, dtype):
    """The openmp backend splits C over the team in blocks of rows, or tiles starting at multiples of 192 rows and
    columns where the blocks are fewer than the threads (400 x 1000 here; a matrix times a vector: blocks of rows),
    each a one-thread BLAS call; the bits are those of one call on one thread."""
    threads, threshold = lk.get_num_threads(), lk.get_parallel_threshold()
    lk.set_num_threads(3)
    lk.set_parallel_threshold(0)
    try:
        for m, k, n in [(1000, 300, 200), (999, 500, 301), (2000, 40, 40), (800, 17, 999), (1200, 250, 1000),
                        (400, 250, 1000)]:
            a, b, x = rand((m, k), dtype), rand((k, n), dtype), rand(k, dtype)
            for A, B in [(a, b), (np.asfortranarray(a), b), (a, b[:, :1]), (a, x), (a[:, 0], a)]:
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
    A, x = rand((300, 200), dtype), rand(200, dtype)
    assert_gemm_close(f(A, x), A, x)
    assert_gemm_close(f(x, A.T), x, A.T)
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
    lk.jit(mm)(a, a[0])
    assert t.get() == before


def matvec_plus(A, x, b):
    return A @ x + b


def matvec_into_column(A, x, Y):
    Y[:, 1] = A @ x
    return Y


def test_matrix_vector_products_inside_expressions(one_thread):
    A, x, b = rand((400, 300), np.float64), rand(300, np.float64), rand(400, np.float64)
    calls = lk.runtime.blas()["calls"]
    assert np.array_equal(lk.jit(matvec_plus)(A, x, b), A @ x + b)
    assert lk.runtime.blas()["calls"] > calls
    # into a strided column: the BLAS writes contiguous results only, so the reduction's own loop runs
    Y = np.zeros((400, 3))
    got = lk.jit(matvec_into_column)(A, x, Y.copy())
    exp = Y.copy()
    exp[:, 1] = A @ x
    np.testing.assert_allclose(got, exp, rtol=1e-12, atol=1e-12)


CACHED = """\
import json, os, ctypes
import numpy as np
import lorikeet as lk

@lk.jit
def f(a, b, x):
    return a @ b, a @ x

i = lk.runtime.blas()
if os.environ.get("LK_T_ONE_THREAD") and i["library"]:
    prefix, _, suffix = i["symbol"].partition("cblas_dgemm")
    getattr(ctypes.CDLL(i["library"]), f"{prefix}openblas_set_num_threads{suffix}")(1)
rng = np.random.default_rng(5)
a, b, x = rng.standard_normal((300, 200)), rng.standard_normal((200, 100)), rng.standard_normal(200)
c, y = f(a, b, x)
print(json.dumps({"same": bool(np.array_equal(c, a @ b) and np.array_equal(y, a @ x)),
                  "close": bool(np.allclose(c, a @ b) and np.allclose(y, a @ x)),
                  "calls": lk.runtime.blas()["calls"], "info": f.cache_info()}))
"""


def test_code_from_the_disk_cache_finds_the_blas_at_run_time(tmp_path):
    """The cached object names rt_matmul, never the BLAS's address: a second process (its BLAS mapped elsewhere)
    loads it and calls its own BLAS; with the BLAS off, the same entry runs the own kernel."""
    info()
    from test_cache import run, write
    main = write(tmp_path, "main.py", CACHED)
    cache = tmp_path / "cache"
    first = run(main, cache, env={"LK_T_ONE_THREAD": "1"})
    assert first["info"]["compiles"] == 1 and first["same"] and first["calls"] == 2
    second = run(main, cache, env={"LK_T_ONE_THREAD": "1"})
    assert second["info"] == {"hits": 1, "misses": 0, "compiles": 0}
    assert second["same"] and second["calls"] == 2
    off = run(main, cache, env={"LORIKEET_BLAS": "0"})
    assert off["info"]["hits"] == 1 and off["close"] and off["calls"] == 0


def test_products_from_python_threads_beside_numpy(one_thread):
    """Compiled code runs without the GIL: products from several threads at once, and NumPy's in another,
    each right, and the BLAS's thread count back where it was when all are done."""
    import threading
    before = one_thread.get()
    one_thread.set(2)
    try:
        a, b, x = rand((300, 200), np.float64), rand((200, 250), np.float64), rand(200, np.float64)
        f = lk.jit(mm)
        exp_c, exp_y = f(a, b), f(a, x)
        errors = []

        def lorikeet_products():
            for _ in range(30):
                if not (np.array_equal(f(a, b), exp_c) and np.array_equal(f(a, x), exp_y)):
                    errors.append("lorikeet")

        def numpy_products():
            for _ in range(30):
                if not np.allclose(a @ b, exp_c):
                    errors.append("numpy")

        threads = [threading.Thread(target=lorikeet_products) for _ in range(3)]
        threads.append(threading.Thread(target=numpy_products))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert one_thread.get() == 2
    finally:
        one_thread.set(before)
