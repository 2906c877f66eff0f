"""The benchmark workloads, in the order the suite runs and the docs list them.

Add one: write a module with the plain function, its NumPy reference and an input maker, and a Workload
(benchmarks/spec.py) for it; list it here.
"""
from . import (blackscholes, compile_time, conv, crc, dispatch, fused, growcut, mandelbrot, matmult, nbody,
               pairwise, products, regression, summation)

WORKLOADS = [
    *matmult.WORKLOADS,
    *products.WORKLOADS,
    *conv.WORKLOADS,
    regression.WORKLOAD,
    pairwise.WORKLOAD,
    fused.WORKLOAD,
    *summation.WORKLOADS,
    blackscholes.WORKLOAD,
    blackscholes.ARRAY_WORKLOAD,
    nbody.WORKLOAD,
    nbody.ARRAY_WORKLOAD,
    growcut.WORKLOAD,
    mandelbrot.WORKLOAD,
    *crc.WORKLOADS,
    mandelbrot.COMPLEX_WORKLOAD,
    dispatch.WORKLOAD,
    compile_time.WORKLOAD,
]

SWEEPS = [fused.SWEEP, matmult.SWEEP]

BY_NAME = {w.name: w for w in WORKLOADS}
SWEEP_BY_NAME = {s.name: s for s in SWEEPS}
