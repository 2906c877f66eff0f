"""Thread scaling of the openmp backend: a 10M float64 sum and a 10M map (a * 2.0) at 1, 2, 4, ... threads.

    PYTHONPATH=pyshim:. python -m benchmarks.scaling

Prints the best of 10 steady-state calls for each thread count, up to the machine's cores."""
import os
import time

import numpy as np

import lorikeet as lk


def total(a):
    return np.sum(a)


def doubled(a):
    return a * 2.0


def main():
    a = np.random.default_rng(0).random(10_000_000)
    cores = os.cpu_count() or 1
    counts = [n for n in (1, 2, 4, 8, 16, 32, 64) if n <= cores]
    print(f"openmp thread scaling, 10M float64, {cores} cores")
    for n in counts:
        lk.set_num_threads(n)
        row = []
        for name, fn in (("sum", total), ("map a*2.0", doubled)):
            f = lk.jit(fn, backend="openmp")
            f(a)
            best = min(_timed(f, a) for _ in range(10))
            row.append(f"{name} {best * 1e3:8.2f} ms")
        print(f"{n:3d} threads: " + "   ".join(row), flush=True)


def _timed(f, a):
    t = time.perf_counter()
    f(a)
    return time.perf_counter() - t


if __name__ == "__main__":
    main()
