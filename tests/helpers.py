"""Helpers the test files share."""
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
