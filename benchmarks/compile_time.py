"""python -m benchmarks.compile_time [--backends cpu,openmp] [--repeats N] [--only NAME[,NAME]] [--long-chains]
                                   [--plain N [--pyshim DIR[,DIR]]]

First-call compile time of every benchmark workload's kernel, per lorikeet backend: the first call of a fresh
copy of the kernel (read from a copy of its module's file at a new path, so that no cache, the process's
compilations by IR hash included, can serve it) on small inputs of the workload's types, less the
median of the calls after it. The median over `repeats` fresh dispatchers is printed, one row a workload, with
the LLVM IR's line count of the first.

--long-chains instead times straight-line functions of 300, 1,200 and 3,000 statements `s += a[i % n] * k`, each
with a ZeroDivisionError check and a bounds check (issue 12's r12: their compile time must grow linearly).

--plain N instead times the first call of one plain function (loops, array expressions, reductions: nothing that
issue 14 added) in N fresh processes for each lorikeet build named by --pyshim (the pyshim folders of worktrees,
default this tree's), alternating builds, and prints each build's median and its ratio to the first: the check
that new library functions did not make every compilation slower (issue 14's closing note: at most 10%).

Times are the process's CPU time (time.process_time), so that other processes on a shared machine inflate them
less than wall time; compiling runs on the calling thread. The inputs are small so that the figure is compile
time: the run's share is the steady call subtracted.
"""
import argparse
import inspect
import itertools
import os
import shutil
import statistics
import sys
import tempfile
import time
import types

import numpy as np

from .workloads import WORKLOADS

# Sizes of the same argument types as the workload's, small enough that a call is negligible.
SMALL = {"matmult_loops": (8, 8, 8), "matmult_prange": (8, 8, 8), "matmult_comprehension": (8, 8, 8),
         "growcut": (10, 2), "mandelbrot": (16, 12, 8)}


def small_size(w):
    if w.name in SMALL:
        return SMALL[w.name]
    size = w.sizes["quick"]
    return min(size, 64) if isinstance(size, int) else size


_copies = itertools.count()


def fresh_copy(w, folder):
    """The kernel as a function no cache has seen: its code, with its module's globals (helpers, imports), read
    from a copy of its module's file at a new path (the source lines are the same, the file name is new)."""
    src = inspect.getsourcefile(w.kernel)
    path = os.path.join(folder, f"copy{next(_copies)}_{os.path.basename(src)}")
    shutil.copyfile(src, path)
    code = w.kernel.__code__.replace(co_filename=path)
    return types.FunctionType(code, w.kernel.__globals__, w.kernel.__name__, w.kernel.__defaults__)


def first_call_compile(lk, w, backend, repeats, folder):
    args = w.make_inputs(small_size(w))
    firsts, steadies = [], []
    for _ in range(repeats):
        fn = lk.jit(fresh_copy(w, folder), backend=backend)
        t0 = time.process_time()
        fn(*args)
        firsts.append(time.process_time() - t0)
        for _ in range(3):
            t0 = time.process_time()
            fn(*args)
            steadies.append(time.process_time() - t0)
    lines = lk.jit(fresh_copy(w, folder), backend=backend).inspect_llvm(*args).count("\n")
    return max(statistics.median(firsts) - statistics.median(steadies), 0.0), lines


def long_chain_source(n):
    return ("def chain(a):\n    n = len(a)\n    s = 0.0\n"
            + "".join(f"    s += a[{i} % n] * {i % 7}\n" for i in range(n)) + "    return s\n")


def long_chains(lk, backend, folder, sizes=(300, 1200, 3000)):
    import numpy as np

    print(f"{'statements':>12s}{backend + ' s':>12s}{'ms each':>12s}")
    for n in sizes:
        path = os.path.join(folder, f"chain{n}_{next(_copies)}.py")
        with open(path, "w") as f:
            f.write(long_chain_source(n))
        ns = {}
        exec(compile(long_chain_source(n), path, "exec"), ns)
        fn = lk.jit(ns["chain"], backend=backend, cache=False)
        a = np.arange(7.0)
        t0 = time.process_time()
        fn(a)
        t = time.process_time() - t0
        print(f"{n:12d}{t:12.2f}{t / n * 1e3:12.2f}", flush=True)


def plain(a, b, n):
    """Issue 14's yardstick: what a kernel written before it looks like (a loop, a fused map, reductions)."""
    s = 0.0
    for i in range(n):
        s += a[i] * b[i]
    c = np.sqrt(a * a + b * b) + 1.0
    return s + c.sum() + np.mean(a) * np.max(b)


def warm(x):
    return x + 1.0


def plain_child(backend):
    """In a fresh process: the first call of `plain` less its steady call, CPU seconds, printed."""
    import lorikeet as lk

    lk.jit(warm, backend=backend, cache=False)(1.0)  # the JIT's own start-up is not the function's compile time
    fn = lk.jit(plain, backend=backend, cache=False)
    args = (np.linspace(0.0, 1.0, 64), np.linspace(1.0, 2.0, 64), 64)
    t0 = time.process_time()
    fn(*args)
    first = time.process_time() - t0
    steady = []
    for _ in range(3):
        t0 = time.process_time()
        fn(*args)
        steady.append(time.process_time() - t0)
    print(lk.__file__, f"{first - statistics.median(steady):.6f}")


def plain_in_fresh_processes(n, pyshims, backend):
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    times = {d: [] for d in pyshims}
    for _ in range(n):
        for d in pyshims:
            env = dict(os.environ, PYTHONPATH=os.path.abspath(d), LORIKEET_CACHE="0")
            child = [sys.executable, "-m", "benchmarks.compile_time", "--plain-child", "--backends", backend]
            p = subprocess.run(child, cwd=root, env=env, capture_output=True, text=True, check=True)
            where, t = p.stdout.split()[-2:]
            if not where.startswith(os.path.abspath(d) + os.sep):
                raise RuntimeError(f"the child imported lorikeet from {where}, not from {d}")
            times[d].append(float(t))
    base = statistics.median(times[pyshims[0]])
    print(f"first call of benchmarks.compile_time.plain, {backend}, median of {n} fresh processes (CPU ms)")
    for d in pyshims:
        med = statistics.median(times[d])
        print(f"{d:48s}{med * 1e3:10.1f} ms  x{med / base:5.3f}   ({', '.join(f'{t * 1e3:.1f}' for t in times[d])})")


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.compile_time", description=__doc__.split("\n\n")[1])
    p.add_argument("--backends", default="cpu,openmp")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--only", default="")
    p.add_argument("--long-chains", action="store_true", help="time 300, 1200 and 3000 checked statements instead")
    p.add_argument("--plain", type=int, default=0, metavar="N",
                   help="time the first call of one plain function in N fresh processes per build instead")
    p.add_argument("--pyshim", default="pyshim", help="--plain: the lorikeet builds compared (pyshim folders)")
    p.add_argument("--plain-child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.plain_child:
        plain_child(a.backends.split(",")[0])
        return 0
    if a.plain:
        plain_in_fresh_processes(a.plain, a.pyshim.split(","), a.backends.split(",")[0])
        return 0
    import lorikeet as lk
    backends = a.backends.split(",")
    folder = tempfile.mkdtemp(prefix="lk-compile-time-")
    if a.long_chains:
        for b in backends:
            long_chains(lk, b, folder)
        shutil.rmtree(folder, True)
        return 0
    only = set(a.only.split(",")) if a.only else None
    # the JIT's own start-up is not any kernel's compile time
    for b in backends:
        lk.jit(lambda x: x + 1.0, backend=b)(1.0)
    print(f"{'workload':24s}" + "".join(f"{b + ' ms':>12s}{b + ' IR':>12s}" for b in backends))
    totals = dict.fromkeys(backends, 0.0)
    total_lines = dict.fromkeys(backends, 0)
    for w in WORKLOADS:
        if w.kind != "kernel" or (only and w.name not in only):
            continue
        row = f"{w.name:24s}"
        for b in backends:
            try:
                t, lines = first_call_compile(lk, w, b, a.repeats, folder)
                totals[b] += t
                total_lines[b] += lines
                row += f"{t * 1e3:12.1f}{lines:12d}"
            except Exception as e:  # a workload a backend cannot compile: say so, go on
                row += f"{type(e).__name__:>24s}"
        print(row, flush=True)
    print(f"{'total':24s}" + "".join(f"{totals[b] * 1e3:12.1f}{total_lines[b]:12d}" for b in backends))
    shutil.rmtree(folder, True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
