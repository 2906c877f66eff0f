"""First-call compile time of a small (10-line) loop function. Every repeat compiles a fresh function object,
made from this source under a new name in a new module, so that no cache of any tool can serve it."""
import numpy as np

from ..spec import Workload


def small_loop(a, b):
    n = a.shape[0]
    total = 0.0
    for i in range(n):
        x = a[i] * b[i]
        if x > 0.5:
            total += x
        else:
            total -= 0.5 * x
    mean = total / n
    return mean


def make_inputs(n):
    rng = np.random.default_rng(15)
    return rng.random(n), rng.random(n)


WORKLOAD = Workload(
    name="compile_time", title="first-call compile time, 10-line loop function", kernel=small_loop,
    reference=small_loop, make_inputs=make_inputs, sizes={"quick": 1000, "full": 1000},
    describe=lambda n: f"2 arrays of {n} float64", python_modes=(), kind="compile", tools=("numba",),
    rtol=1e-12, note="median over fresh function objects; the first call includes one run on 1000 elements.")
