"""The fused elementwise expression sqrt(a*a + b*b) * exp(-c) on float64 vectors: NumPy makes four temporaries,
a fusing compiler makes one pass over three inputs and one output (32 bytes of traffic per element)."""
import numpy as np

from ..spec import Sweep, Workload


def fused_expr(a, b, c):
    return np.sqrt(a * a + b * b) * np.exp(-c)


def fused_numpy(a, b, c):
    return np.sqrt(a * a + b * b) * np.exp(-c)


def make_inputs(n):
    rng = np.random.default_rng(10)
    return rng.random(n), rng.random(n), rng.random(n)


WORKLOAD = Workload(
    name="fused_expr", title="fused sqrt(a*a+b*b)*exp(-c)", kernel=fused_expr, reference=fused_numpy,
    make_inputs=make_inputs, sizes={"quick": 10_000_000, "full": 10_000_000},
    describe=lambda n: f"{n:,} float64 x3", bytes_moved=lambda n: 32 * n, python_modes=("quick", "full"),
    rtol=1e-14, note="pure Python runs the same array expression in CPython, i.e. it is NumPy.")

SWEEP = Sweep(
    name="fused", title="sqrt(a*a+b*b)*exp(-c), float64: time vs n", workloads=[WORKLOAD],
    sizes={"quick": [10 ** k for k in range(2, 8)], "full": [10 ** k for k in range(2, 8)] + [30_000_000]},
    x_of=lambda n: n, x_label="elements")
