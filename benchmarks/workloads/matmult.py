"""Parakeet's matmult (benchmarks/matmult.py of iskandr/parakeet): X (1200x500) times Y (500x1200), float32.

Two ways a scientist writes it: the nested comprehension over rows of X and columns of Y (Parakeet's
`matmult_high_level`) and the triple loop (Parakeet's `matmult_loops`, here allocating its result instead of
taking it as an argument). Both are checked against np.dot, which is also the NumPy timing.
"""
import numpy as np

from ..spec import Sweep, Workload

try:
    from lorikeet import prange   # lk.prange: range for Python; Numba's runs get numba.prange (harness)
except ImportError:   # pragma: no cover - the lorikeet rows then say why
    prange = range


def matmult_loops(X, Y):
    m, d = X.shape
    n = Y.shape[1]
    Z = np.zeros((m, n), dtype=np.float32)
    for i in range(m):
        for j in range(n):
            total = X[i, 0] * Y[0, j]
            for k in range(1, d):
                total += X[i, k] * Y[k, j]
            Z[i, j] = total
    return Z


def matmult_prange(X, Y):
    """matmult_loops with its rows declared independent: how a Numba user parallelises it."""
    m, d = X.shape
    n = Y.shape[1]
    Z = np.zeros((m, n), dtype=np.float32)
    for i in prange(m):
        for j in range(n):
            total = X[i, 0] * Y[0, j]
            for k in range(1, d):
                total += X[i, k] * Y[k, j]
            Z[i, j] = total
    return Z


def matmult_comprehension(X, Y):
    return np.array([[np.dot(x, y) for y in Y.T] for x in X])


def matmult_numpy(X, Y):
    return np.dot(X, Y)


def make_inputs(size):
    m, d, n = size
    rng = np.random.default_rng(1200)
    X = rng.standard_normal((m, d)).astype(np.float32)
    Y = rng.standard_normal((d, n)).astype(np.float32)
    return X, Y


def describe(size):
    m, d, n = size
    return f"({m}x{d})·({d}x{n}) float32"


# float32 sums of 500 products: BLAS blocks and orders the sum differently from a loop.
_common = dict(reference=matmult_numpy, make_inputs=make_inputs, describe=describe, rtol=1e-3, atol=1e-3)

LOOPS = Workload(
    name="matmult_loops", title="Parakeet matmult, triple loop", kernel=matmult_loops,
    sizes={"quick": (300, 200, 300), "full": (1200, 500, 1200)}, python_modes=(), **_common)

COMPREHENSION = Workload(
    name="matmult_comprehension", title="Parakeet matmult, nested comprehension of np.dot",
    kernel=matmult_comprehension, sizes={"quick": (300, 200, 300), "full": (1200, 500, 1200)},
    python_modes=("quick", "full"), **_common)

PRANGE = Workload(
    name="matmult_prange", title="matmult_loops with prange over rows", kernel=matmult_prange,
    sizes={"quick": (300, 200, 300), "full": (1200, 500, 1200)}, python_modes=(), **_common)

WORKLOADS = [LOOPS, PRANGE, COMPREHENSION]

SWEEP = Sweep(
    name="matmult", title="matmult (n x n) · (n x n) float32: time vs n", workloads=[LOOPS, COMPREHENSION],
    sizes={"quick": [(n, n, n) for n in (32, 64, 128, 256)],
           "full": [(n, n, n) for n in (64, 128, 256, 512, 768, 1200)]},
    x_of=lambda size: size[0], x_label="n")
