"""python -m benchmarks.auto_choice [--quick] [--out PATH]: how close backend="auto" comes to the best backend
for each call (issue 11). Not a timed test; `make bench` runs it after `python -m lorikeet calibrate`, and
`python -m benchmarks --report` renders its JSON (default benchmarks/results/auto-<mode>-<machine>.json) into
docs/benchmarks.md.

For each workload and size, host arrays in and out: the time of the call on every backend available here
(cpu, openmp, gpu; each compiled and warm, best of a few), auto's time and the backend it chose, after auto has
had the calls its tiering needs (so the figure is its steady choice; the calls it spent on the host before a
gpu compile paid are counted separately). The summary is auto's time over the best backend's, per row and as a
geometric mean: 1.0 is a perfect choice. Run `python -m lorikeet calibrate` first; without it auto uses its
defaults (no gpu for host data).
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np

import lorikeet as lk

from . import machine


def hypot(a, b):
    return np.sqrt(a * a + b * b)


def sum_sq(a):
    return np.sum(a * a + 1.0)


def heavy(a):
    return np.sum(np.sin(a) * np.exp(-a) + np.cos(a * 0.5))


def matmul(a, b):
    return a @ b


def workloads(quick):
    rng = np.random.default_rng(0)
    elems = [1 << k for k in (range(8, 22, 3) if quick else range(8, 26, 2))]
    dims = [32, 128, 512] if quick else [32, 64, 128, 256, 512, 1024, 2048]
    for n in elems:
        a = rng.random(n)
        yield "hypot f64", n, hypot, (a, a.copy())
        yield "sum(a*a+1) f64", n, sum_sq, (a,)
        yield "sin*exp+cos sum f64", n, heavy, (a,)
    for n in dims:
        x = rng.random((n, n), dtype=np.float32)
        yield "matmul f32", n, matmul, (x, x.copy())


def best_of(fn, args, budget_s=0.25, max_reps=50):
    fn(*args)
    best, spent, reps = math.inf, 0.0, 0
    while reps < 3 or (spent < budget_s and reps < max_reps):
        t0 = time.perf_counter()
        fn(*args)
        dt = time.perf_counter() - t0
        best, spent, reps = min(best, dt), spent + dt, reps + 1
    return best


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    backends = ["cpu", "openmp"] + (["gpu"] if lk.gpu_available()[0] else [])
    from lorikeet import _auto

    calibration, where = _auto.status()
    print(f"backends: {', '.join(backends)}; calibration: {where or 'none (defaults)'}")
    rows = []
    fixed = {}
    autos = {}
    for name, n, fn, fargs in workloads(args.quick):
        times = {}
        for b in backends:
            f = fixed.setdefault((name, b), lk.jit(fn, backend=b, cache=False))
            times[b] = best_of(f, fargs)
        fa = autos.setdefault(name, lk.jit(fn, backend="auto", cache=False))
        # tiering: until a gpu compile has paid for itself, calls the gpu would win run on the host; call until
        # auto's prediction no longer has the gpu pending (those calls are counted, not timed)
        warm_calls, t0 = 0, time.perf_counter()
        while warm_calls < 300 and time.perf_counter() - t0 < 5:
            fa(*fargs)
            warm_calls += 1
            e = lk.explain(fa, *fargs)
            pending = e["gpu"] is not None and e["gpu"] < 0.8 * min(e["cpu"], e["openmp"]) and \
                fa.last_backend != "gpu"
            if not pending:
                break
        t_auto = best_of(fa, fargs)
        chosen = fa.last_backend
        steady = lk.explain(fa, *fargs)["steady_choice"]
        best = min(times, key=times.get)
        rows.append({"workload": name, "size": n, "times": times, "auto": t_auto, "chosen": chosen, "best": best,
                     "ratio": t_auto / times[best], "settle_calls": warm_calls, "steady": steady})
        cells = "  ".join(f"{b} {times[b] * 1e3:9.3f}" for b in backends)
        print(f"{name:<22}{n:>10}  {cells}  auto {t_auto * 1e3:9.3f} ms ({chosen:<6}) best {best:<6} "
              f"x{t_auto / times[best]:.2f}" + (f" (steady: {steady}, once a gpu compile pays)" if steady != chosen else ""),
              flush=True)
    gm = math.exp(sum(math.log(r["ratio"]) for r in rows) / len(rows))
    right = sum(r["chosen"] == r["best"] for r in rows)
    worst = max(rows, key=lambda r: r["ratio"])
    steady_right = sum(r["steady"] == r["best"] for r in rows)
    print(f"auto / best backend: geometric mean x{gm:.3f}; best backend chosen in {right}/{len(rows)} rows "
          f"({steady_right} once every gpu compile has paid); worst x{worst['ratio']:.2f} ({worst['workload']}, "
          f"{worst['size']})")
    mode = "quick" if args.quick else "full"
    info = machine.describe()
    out = args.out or os.path.join(os.path.dirname(__file__), "results", f"auto-{mode}-{machine.slug(info)}.json")
    with open(out, "w") as f:
        json.dump({"kind": "auto", "mode": mode, "date": time.strftime("%Y-%m-%d %H:%M"), "machine": info,
                   "versions": machine.versions(), "backends": backends, "calibration": calibration, "rows": rows,
                   "geomean": gm}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
