"""Where the openmp team starts to pay: for a few loop bodies, the smallest size at which running on the team
(forced, threshold 0) beats one thread; beside them, the openmp backend as compiled (its cost threshold decides:
work = elements x cost >= lk.get_parallel_threshold()), which should follow the faster of the two.

    PYTHONPATH=pyshim:. python -m benchmarks.breakeven

Best of many calls at each size (small sizes are noisy), on a quiet machine."""
import time

import numpy as np

import lorikeet as lk


def cheap_sum(a):
    return np.sum(a * a + 1.0)


def math_sum(a):
    return np.sum(np.sin(a) * np.exp(-a))


def cheap_map(a):
    return a * 2.0 + 1.0


CASES = [("sum(a*a + 1)", cheap_sum), ("sum(sin(a) * exp(-a))", math_sum), ("a*2 + 1 (map)", cheap_map)]
SIZES = [250 * 2 ** k for k in range(14)]   # 250 .. 2 million


def best_time(f, a, budget_s=0.2, most=2000):
    f(a)
    best, start, calls = float("inf"), time.perf_counter(), 0
    while calls < most and (calls < 20 or time.perf_counter() - start < budget_s):
        t0 = time.perf_counter()
        f(a)
        best = min(best, time.perf_counter() - t0)
        calls += 1
    return best


def main():
    threshold = lk.get_parallel_threshold()
    print(f"openmp break-even, {lk.get_num_threads()} threads; the threshold is {threshold} work units")
    print(f"{'body':24s} {'size':>9s} {'1 thread':>10s} {'team':>10s} {'as compiled':>12s}")
    for name, fn in CASES:
        cpu = lk.jit(fn, backend="cpu")
        omp = lk.jit(fn, backend="openmp")
        breakeven = None
        for n in SIZES:
            a = np.random.default_rng(n).random(n)
            t_cpu = best_time(cpu, a)
            lk.set_parallel_threshold(0)
            t_team = best_time(omp, a)
            lk.set_parallel_threshold(threshold)
            t_auto = best_time(omp, a)
            if breakeven is None and t_team < t_cpu:
                breakeven = n
            print(f"{name:24s} {n:9d} {t_cpu * 1e6:8.1f}us {t_team * 1e6:8.1f}us {t_auto * 1e6:10.1f}us")
        print(f"  -> the team wins from about {breakeven} elements" if breakeven else "  -> the team never wins here")


if __name__ == "__main__":
    main()
