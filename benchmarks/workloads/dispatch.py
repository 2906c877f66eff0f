"""Per-call dispatch overhead: a function of two small arrays that does almost nothing, called in a loop.
The figure is the time of one call from Python (signature lookup, unboxing, the call, boxing the result)."""
import numpy as np

from ..spec import Workload


def first_plus_first(a, b):
    return a[0] + b[0]


def make_inputs(n):
    return np.arange(1.0, n + 1.0), np.arange(2.0, n + 2.0)


WORKLOAD = Workload(
    name="dispatch", title="per-call overhead, f(a, b) of two small arrays", kernel=first_plus_first,
    reference=first_plus_first, make_inputs=make_inputs, sizes={"quick": 4, "full": 4},
    describe=lambda n: f"2 arrays of {n} float64", python_modes=("quick", "full"), kind="dispatch",
    tools=("python", "numba"), note="time per call from a Python loop; 'Python' is the plain interpreted function.")
