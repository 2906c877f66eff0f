"""inputs.py: random arguments for a fuzz program, written as Python source.

An argument is made by a line of source (`a0 = np.array([...], dtype=np.int8).reshape((4, 6))[::-1, ::2]`), so a
saved program file carries its inputs and rebuilds them exactly, with no pickles. Arrays have every dtype, 0-size
and 1-size dimensions, non-contiguous and negative-stride views, NaN, infinities, signed zeros and the extreme
integers of their dtype; scalars are Python ints, floats and bools and NumPy scalars of every dtype.
"""
import math

import numpy as np

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64"]
INT_DTYPES = [d for d in DTYPES if d.startswith(("int", "uint"))]
FLOAT_DTYPES = ["float16", "float32", "float64"]


def scalar_source(value, dtype):
    """The source of one element of an array of dtype, readable back exactly."""
    if dtype == "bool":
        return "True" if value else "False"
    if dtype in FLOAT_DTYPES:
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(float(value))
    return str(int(value))


def random_element(rng, dtype):
    if dtype == "bool":
        return rng.random() < 0.5
    if dtype in FLOAT_DTYPES:
        r = rng.random()
        if r < 0.06:
            return math.nan
        if r < 0.1:
            return rng.choice([math.inf, -math.inf])
        if r < 0.14:
            return rng.choice([0.0, -0.0])
        if r < 0.18:
            big = {"float16": 6e4, "float32": 3e38, "float64": 1e300}[dtype]
            return rng.choice([big, -big, 1e-5, -1e-5])
        v = round(rng.uniform(-8, 8), rng.choice([0, 1, 2]))
        return float(np.array(v, dtype))  # representable in dtype, so the source round-trips
    info = np.iinfo(dtype)
    r = rng.random()
    if r < 0.12:
        return rng.choice([info.min, info.max, info.min + 1, info.max - 1])
    lo = max(info.min, -9)
    return rng.randint(lo, 9)


def random_shape(rng, ndim, base=None):
    """A shape of ndim dimensions; with base, one that broadcasts against base (some dimensions 1)."""
    if base is not None:
        shape = list(base[len(base) - ndim:]) if ndim <= len(base) else [rng.randint(1, 3)] + list(base)
        return tuple(1 if rng.random() < 0.25 else d for d in shape)
    out = []
    for _ in range(ndim):
        r = rng.random()
        out.append(0 if r < 0.05 else 1 if r < 0.2 else rng.randint(2, 6))
    return tuple(out)


def array_source(rng, dtype, shape):
    """Source that makes an array of dtype and shape: C-contiguous, or a strided view of a larger base."""
    steps = [1] * len(shape)
    transpose = False
    if rng.random() < 0.45 and shape:
        steps = [rng.choice([1, 2, -1, -2, 3]) for _ in shape]
        transpose = len(shape) == 2 and rng.random() < 0.3
    view_shape = tuple(reversed(shape)) if transpose else shape
    base_shape = tuple(n * abs(s) for n, s in zip(view_shape, steps))
    count = int(np.prod(base_shape)) if base_shape else 1
    elems = ", ".join(scalar_source(random_element(rng, dtype), dtype) for _ in range(count))
    src = f"np.array([{elems}], dtype=np.{dtype}).reshape({base_shape!r})"
    if any(s != 1 for s in steps):
        src += "[" + ", ".join(f"::{s}" for s in steps) + "]"
    if transpose:
        src += ".T"
    return src


def python_scalar_source(rng, kind):
    if kind == "bool":
        return rng.choice(["True", "False"])
    if kind == "int":
        return str(rng.choice([0, 1, 2, 3, -1, -7, 5, 100, 300, -129, 2**31, -(2**40)]))
    return rng.choice(["0.5", "-2.25", "3.0", "0.0", "-0.0", "1e10", "nan", "inf", "-inf", "7.5"])


def numpy_scalar_source(rng, dtype):
    return f"np.{dtype}({scalar_source(random_element(rng, dtype), dtype)})"
