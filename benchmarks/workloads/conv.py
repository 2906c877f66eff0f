"""Parakeet's conv_3x3_trim (benchmarks/simple_conv.py of iskandr/parakeet): 3x3 patches of a float64 image,
each multiplied by the 3x3 weights and summed, over the interior rows/columns 1 .. n-3 (Parakeet's trim).

`conv_3x3_trim` is Parakeet's comprehension, verbatim but for range; `conv_3x3_trim_loops` is the same
computation written as loops (the way it is written for Numba), kept as a separate workload.
"""
import numpy as np

from ..spec import Workload

try:
    from lorikeet import prange   # lk.prange: range for Python; Numba's runs get numba.prange (harness)
except ImportError:   # pragma: no cover - the lorikeet rows then say why
    prange = range


def conv_3x3_trim(x, weights):
    return np.array([[(x[i - 1:i + 2, j - 1:j + 2] * weights).sum()
                      for j in range(1, x.shape[1] - 2)]
                     for i in range(1, x.shape[0] - 2)])


def conv_3x3_trim_loops(x, weights):
    h = x.shape[0] - 3
    w = x.shape[1] - 3
    out = np.empty((h, w))
    for i in range(h):
        for j in range(w):
            s = 0.0
            for di in range(3):
                for dj in range(3):
                    s += x[i + di, j + dj] * weights[di, dj]
            out[i, j] = s
    return out


def conv_3x3_trim_prange(x, weights):
    """conv_3x3_trim_loops with its rows declared independent: how a Numba user parallelises it."""
    h = x.shape[0] - 3
    w = x.shape[1] - 3
    out = np.empty((h, w))
    for i in prange(h):
        for j in range(w):
            s = 0.0
            for di in range(3):
                for dj in range(3):
                    s += x[i + di, j + dj] * weights[di, dj]
            out[i, j] = s
    return out


def conv_numpy(x, weights):
    h = x.shape[0] - 3
    w = x.shape[1] - 3
    out = np.zeros((h, w))
    for di in range(3):
        for dj in range(3):
            out += x[di:di + h, dj:dj + w] * weights[di, dj]
    return out


def make_inputs(n):
    rng = np.random.default_rng(3)
    return rng.standard_normal((n, n)), rng.standard_normal((3, 3))


def describe(n):
    return f"{n}x{n} float64, 3x3 weights"


WORKLOADS = [
    Workload(name="conv_3x3_trim", title="Parakeet conv_3x3_trim, nested comprehension", kernel=conv_3x3_trim,
             reference=conv_numpy, make_inputs=make_inputs, sizes={"quick": 400, "full": 1200},
             describe=describe, python_modes=("quick",), rtol=1e-10, atol=1e-12),
    Workload(name="conv_3x3_trim_loops", title="conv_3x3_trim written as loops", kernel=conv_3x3_trim_loops,
             reference=conv_numpy, make_inputs=make_inputs, sizes={"quick": 400, "full": 1200},
             describe=describe, python_modes=(), rtol=1e-10, atol=1e-12),
    Workload(name="conv_3x3_trim_prange", title="conv_3x3_trim_loops with prange over rows",
             kernel=conv_3x3_trim_prange, reference=conv_numpy, make_inputs=make_inputs,
             sizes={"quick": 400, "full": 1200}, describe=describe, python_modes=(), rtol=1e-10, atol=1e-12),
]
