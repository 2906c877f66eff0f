"""Jitted functions that tests/test_workers.py sends to worker processes: a worker finds them by importing this
module (a jitted function is pickled by reference to its module and name)."""
import numpy as np

import lorikeet as lk


@lk.jit
def kernel(x):
    return np.sqrt(x * x + 1.0) * 2.0 - x


def kernel_reference(x):
    return np.sqrt(x * x + 1.0) * 2.0 - x


def affine(x):
    return x * 3.0 + 1.0


# jitted with other options than the default, under another name than its function's: the function is found by
# its own name (affine) and jitted again on the other side with these options
affine_fast = lk.jit(fastmath=True, boundscheck=False)(affine)


def call_with_cache_info(f, x):
    """f(x) in this process, and what f's disk cache did here (f arrives pickled)."""
    return f(x), f.cache_info()
