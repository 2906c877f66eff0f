"""Float64 matrix products as a NumPy user writes them (`A @ B`, `A @ x`, then `A.T @ y`), against NumPy's `@` in
the same run: the rows of issue 15's item 4 (products at BLAS speed on one core and on all cores). On the cpu and
openmp backends lorikeet calls the BLAS NumPy loaded (runtime/blas.c) on one BLAS thread a call, the openmp
backend's team over blocks of rows; NumPy's `@` runs its BLAS on all its threads.
"""
import numpy as np

from ..spec import Workload


def gemm(A, B):
    return A @ B


def gemm_numpy(A, B):
    return A @ B


def matvec_pair(A, x):
    """A @ x then A.T @ y: the two matrix-vector products of a least-squares gradient."""
    y = A @ x
    return A.T @ y


def matvec_pair_numpy(A, x):
    return A.T @ (A @ x)


def square_inputs(n):
    rng = np.random.default_rng(4000)
    return rng.standard_normal((n, n)), rng.standard_normal((n, n))


def matvec_inputs(n):
    rng = np.random.default_rng(4001)
    return rng.standard_normal((n, n)), rng.standard_normal(n)


def describe_square(n):
    return f"({n}x{n})·({n}x{n}) float64"


def describe_matvec(n):
    return f"A.T @ (A @ x), A {n}x{n} float64"


# equal to NumPy's bits only when both run the BLAS on one thread: the check is the rounding of a dot product
_common = dict(rtol=1e-9, atol=1e-9, tools=("numpy",), python_modes=())

GEMM_1000 = Workload(
    name="gemm_1000", title="A @ B, float64 1000²", kernel=gemm, reference=gemm_numpy, make_inputs=square_inputs,
    sizes={"quick": 1000, "full": 1000}, describe=describe_square, **_common)

GEMM_4000 = Workload(
    name="gemm_4000", title="A @ B, float64 4000²", kernel=gemm, reference=gemm_numpy, make_inputs=square_inputs,
    sizes={"quick": 2000, "full": 4000}, describe=describe_square, **_common)

MATVEC_4000 = Workload(
    name="matvec_4000", title="A @ x then A.T @ y, float64 4000²", kernel=matvec_pair, reference=matvec_pair_numpy,
    make_inputs=matvec_inputs, sizes={"quick": 4000, "full": 4000}, describe=describe_matvec,
    bytes_moved=lambda n: 2 * 8 * n * n, **_common)

WORKLOADS = [GEMM_1000, GEMM_4000, MATVEC_4000]
