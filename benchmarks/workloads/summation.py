"""A 10M-element float64 sum, two ways: an accumulating loop (strict left-to-right order, as CPython computes
it) and np.sum on the array. NumPy's pairwise sum differs in the last bits, hence the tolerance."""
import numpy as np

from ..spec import Workload


def sum_loop(a):
    total = 0.0
    for i in range(a.shape[0]):
        total += a[i]
    return total


def sum_array(a):
    return np.sum(a)


def sum_numpy(a):
    return np.sum(a)


def make_inputs(n):
    return (np.random.default_rng(11).random(n),)


_common = dict(reference=sum_numpy, make_inputs=make_inputs, sizes={"quick": 10_000_000, "full": 10_000_000},
               describe=lambda n: f"{n:,} float64", bytes_moved=lambda n: 8 * n, rtol=1e-9)

WORKLOADS = [
    Workload(name="sum_loop", title="10M sum, accumulating loop", kernel=sum_loop, python_modes=("quick",),
             note="a strict-order loop cannot be vectorised without fastmath; NumPy's sum is pairwise and SIMD.",
             **_common),
    Workload(name="sum_array", title="10M sum, np.sum", kernel=sum_array, python_modes=("quick", "full"),
             **_common),
]
