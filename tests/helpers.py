"""Helpers the test files share."""
import numpy as np

import lorikeet as lk

_jitted = {}


def J(fn):
    """One dispatcher per Python function, so that signatures compiled once are reused across tests."""
    d = _jitted.get(fn)
    if d is None:
        d = _jitted[fn] = lk.jit(fn)
    return d


def skip_on_gpu(why):
    """For a test about what only the cpu and openmp backends do (their LLVM code, their allocator): on the gpu
    backend (LORIKEET_BACKEND=gpu) it skips, saying why."""
    import pytest
    if lk.get_backend() == "gpu":
        pytest.skip(f"gpu backend: {why}")


def allocations(fn, *args):
    """Buffers allocated by one call of the compiled fn (compiled, and run once, beforehand)."""
    skip_on_gpu("counts the host allocator's buffers; a gpu call's arrays are device memory, counted with the "
                "staging copies of its arguments")
    d = J(fn)
    d(*args)
    before = lk.runtime.stats()["allocations"]
    d(*args)
    return lk.runtime.stats()["allocations"] - before


class OnlyDLPack:
    """An array that offers DLPack alone (as JAX's do), to reach lorikeet's DLPack import."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, **kw):
        return self.a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def prange_reductions(a):
    """A prange loop with three reductions (+= of floats, max, += of ints): kernels combine them over blocks."""
    s = 0.0
    m = -1e300
    c = 0
    for i in lk.prange(len(a)):
        s += a[i]
        m = max(m, a[i])
        c += 1
    return s, m, c


# The three spellings of a matrix product (tests/test_linalg.py, tests/test_regressions_values.py).
def mm_at(a, b):
    return a @ b


def mm_dot(a, b):
    return np.dot(a, b)


def mm_matmul(a, b):
    return np.matmul(a, b)
