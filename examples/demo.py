"""demo.py: what `make demo` runs. Each example of examples/kernels.py runs under lorikeet and under NumPy;
the table shows both results, whether they agree, and the times: NumPy's, lorikeet's first call (which
compiles the function for these argument types, then runs it) and lorikeet's later calls.

Exits with status 1 if any result disagrees with NumPy's (or an example fails), else 0.
Run from the repository root: PYTHONPATH=pyshim .venv/bin/python examples/demo.py
"""
import os
import platform
import statistics
import sys
import time

import numpy as np

try:
    import lorikeet as lk
except ImportError:  # run without PYTHONPATH=pyshim: use the checkout's package
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pyshim"))
    import lorikeet as lk
import kernels as k

LATER_CALLS = 5  # lorikeet's later calls, and NumPy's calls, are timed this many times; the median is shown


def timed(fn, *args):
    t0 = time.perf_counter()
    result = fn(*args)
    return result, time.perf_counter() - t0


def median_time(fn, args, repeat):
    return statistics.median(timed(fn, *args)[1] for _ in range(repeat))


def summary(x):
    """A short text for a result: a scalar, a tuple of scalars, or an array's shape and sum."""
    if isinstance(x, tuple):
        return ", ".join(summary(v) for v in x)
    if isinstance(x, np.ndarray):
        total = x.sum()
        shown = f"{total:,}" if x.dtype.kind in "iub" else f"{total:.8g}"
        return f"{'x'.join(map(str, x.shape))} sum {shown}"
    return f"{x:.10g}" if isinstance(x, (float, np.floating)) else str(x)


def agreement(got, want, rtol):
    """(ok, text): whether got matches want (exactly, or to relative tolerance rtol) and how closely."""
    got_parts = got if isinstance(got, tuple) else (got,)
    want_parts = want if isinstance(want, tuple) else (want,)
    if len(got_parts) != len(want_parts):
        return False, "NO: shape"
    worst = 0.0
    for g, w in zip(got_parts, want_parts):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape:
            return False, "NO: shape"
        if np.array_equal(g, w):
            continue
        scale = np.maximum(np.abs(w), np.finfo(np.float64).tiny)
        worst = max(worst, float(np.max(np.abs(g.astype(np.float64) - w) / scale)))
    if worst == 0.0:
        return True, "exact"
    return worst <= rtol, f"{'' if worst <= rtol else 'NO: '}{worst:.0e}"


def ms(seconds):
    return f"{seconds * 1e3:8.1f} ms"


# column widths: example, lorikeet's result, NumPy's result, agree, each time, speed-up
W_NAME, W_RESULT, W_AGREE, W_TIME, W_SPEED = 30, 27, 10, 12, 10
WIDTH = W_NAME + 2 * W_RESULT + W_AGREE + 3 * W_TIME + W_SPEED + 3


class Example:
    def __init__(self, name, jitted, reference, args, rtol=0.0, repeat=LATER_CALLS):
        self.name, self.jitted, self.reference, self.args = name, jitted, reference, args
        self.rtol, self.repeat = rtol, repeat

    def run(self):
        """One row of the table; returns True if lorikeet agrees with NumPy."""
        want = self.reference(*self.args)
        t_numpy = median_time(self.reference, self.args, self.repeat)
        try:
            got, t_first = timed(self.jitted, *self.args)
            t_later = median_time(self.jitted, self.args, self.repeat)
        except Exception as e:  # an example that fails is a failed check, shown in the table, not a traceback
            print(f"  {self.name:<{W_NAME}} lorikeet raised {type(e).__name__}: {e}")
            return False
        ok, how = agreement(got, want, self.rtol)
        speedup = t_numpy / t_later if t_later > 0 else float("inf")
        print(f"  {self.name:<{W_NAME}} {summary(got):<{W_RESULT}} {summary(want):<{W_RESULT}} {how:<{W_AGREE}}"
              f"{ms(t_numpy):>{W_TIME}}{ms(t_first):>{W_TIME}}{ms(t_later):>{W_TIME}}{speedup:>{W_SPEED - 1}.1f}x")
        return ok


def main():
    rng = np.random.default_rng(2024)
    n = 10_000_000
    a, b, c = rng.random(n), rng.random(n), rng.random(n)
    rod = np.zeros(100_000)
    rod[40_000:60_000] = 100.0

    sections = [
        ("loops", [
            Example("mandelbrot 600x400, <=100 it", k.mandelbrot, k.mandelbrot_numpy, (600, 400, 100), repeat=3),
            Example("heat stencil 100k x 500 steps", k.heat_1d, k.heat_1d_numpy, (rod, 500), rtol=1e-12, repeat=3),
        ]),
        ("array expression, 10M float64", [
            Example("sqrt(a*a+b*b)*exp(-c)", k.damped_norm, k.damped_norm_numpy, (a, b, c), rtol=1e-12),
        ]),
        ("reductions, 10M float64", [
            Example("sum of squares: for loop", k.sum_squares_loop, k.sum_squares_numpy, (a,), rtol=1e-9),
            Example("sum of squares: (a*a).sum()", k.sum_squares, k.sum_squares_numpy, (a,), rtol=1e-9),
            Example("mean, std", k.mean_std, k.mean_std_numpy, (a,), rtol=1e-9),
        ]),
    ]

    print(f"lorikeet demo: backend {lk.get_backend()}, NumPy {np.__version__}, Python {platform.python_version()}, "
          f"{os.cpu_count()} CPUs ({platform.machine()})")
    print()
    print(f"  {'':<{W_NAME}} {'result':<{2 * W_RESULT + 1}} {'':<{W_AGREE}}{'time':^{3 * W_TIME}}".rstrip())
    print(f"  {'example':<{W_NAME}} {'lorikeet':<{W_RESULT}} {'NumPy':<{W_RESULT}} {'agree':<{W_AGREE}}"
          f"{'NumPy':>{W_TIME}}{'lk 1st call':>{W_TIME}}{'lk later':>{W_TIME}}{'speed-up':>{W_SPEED}}")
    failed = []
    for title, examples in sections:
        print(f"  -- {title} " + "-" * (WIDTH - 4 - len(title)))
        for ex in examples:
            if not ex.run():
                failed.append(ex.name)
    print()
    print("  lk 1st call: compiles the function for these argument types (typed IR, LLVM -O3, JIT), then runs it.")
    print(f"  lk later, NumPy: median of {LATER_CALLS} calls (3 for the loops). speed-up: NumPy time / lk later.")
    print("  agree: 'exact', or the largest relative difference from NumPy (summation order, libm).")
    print()
    if failed:
        print(f"FAILED: lorikeet raised or disagreed with NumPy on: {', '.join(failed)}")
        return 1
    print("All results agree with NumPy.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
