"""Helpers the test files share."""
import inspect
import os

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


def assert_compile_error(f, snippet, *args):
    """lk.jit(f)(*args) raises lk.CompileError naming f's file and the number and text of the line holding
    snippet; returns the message."""
    import pytest
    lines, first = inspect.getsourcelines(f)
    hits = [i for i, line in enumerate(lines) if snippet in line]
    assert hits, f"test bug: {snippet!r} not in the source of {f.__name__}"
    with pytest.raises(lk.CompileError) as e:
        lk.jit(f)(*args)
    msg = str(e.value)
    here = os.path.basename(inspect.getsourcefile(f))
    assert here in msg and f"line {first + hits[0]}" in msg and lines[hits[0]].strip() in msg, msg
    return msg
