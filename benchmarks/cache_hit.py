"""python -m benchmarks.cache_hit [--runs N]: what the on-disk code cache saves and costs (issue 11). Not a timed test.

For each function below, in fresh processes, medians over --runs processes:
  cold       the first call with the cache off: a compile (typing, LLVM's optimiser and code generator)
  warm       the first call with a warm cache: the key, the entry read and checked, typing, the object loaded
             without LLVM's optimiser or code generator; given twice: wall time, and the CPU time of the calling
             thread (time.thread_time), which a machine shared with other work inflates much less. The JIT is
             started on a thread of its own when lorikeet is imported (backends/llvm/jit.c): a first call waits only
             for what is left of that, so the figure depends on a core being free meanwhile
  at call    the warm first call with LORIKEET_JIT_THREAD=0: the JIT started by the call itself (all of its ~1 ms
             in the figure, as on a machine with no core free), and the import's and import+call's medians of both
             ways under the table
  lookup     of that warm call, the time inside the cache's lookup (the dispatcher's _cache_ms), and which of the
             cache's Python modules it imported (a plain hit imports none: pyshim/cache_hit.c)
  key        the key as a lookup makes it (pyshim/cache_key.c: the preimage and its SHA-256), in a new process
             whose JIT is started and whose function's untyped IR is made (a compile needs both anyway)
  miss       what a miss adds to a cold compile: its lookup (importing the store, which a plain hit does not)
             and the save of the entry, from the dispatcher's _cache_ms, each run against a copy of a folder
             that another function was saved to (made, and its eviction pass recent, as a used cache is)
  import     `import lorikeet`
The first call in a process also starts the JIT, in both the cold and warm columns.

Where a GPU can be used (and --backend is not gpu already), the same table follows for backend="gpu": the cold first
call runs NVRTC and LLVM (and starts CUDA), the warm one loads the host code and the kernels' image from the entry
and runs neither (checked: no NVRTC run, no compile). Without a GPU that part says why it was left out.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# the functions measured, for str.format(backend=...): also benchmarks.first_call_parts's
FUNCTIONS = """\
@lk.jit(backend={backend!r})
def small(a, b):
    return np.sqrt(a * a + b * b).sum()

@lk.jit(backend={backend!r})
def stencil(u, c):
    out = np.empty_like(u)
    out[0] = u[0]
    out[-1] = u[-1]
    for i in lk.prange(1, u.shape[0] - 1):
        out[i] = u[i] + c * (u[i - 1] - 2.0 * u[i] + u[i + 1])
    return out, out.sum(), np.abs(out).max()

fn = {{"small": small, "stencil": stencil}}[sys.argv[1]]
args = {{"small": (np.ones(100), np.ones(100)), "stencil": (np.linspace(0, 1, 100), 0.25)}}[sys.argv[1]]
"""

PROGRAM = """\
import json, sys, time
import numpy as np
t_import = t_start = time.perf_counter()
import lorikeet as lk
t_import = time.perf_counter() - t_import

""" + FUNCTIONS + """key = first = cpu = 0.0
before = set(sys.modules)
if sys.argv[2] == "key":
    # the key as a lookup makes it, in a new process: the toolchain's text, the preimage and its hash (the
    # function's source and free names are read for its untyped IR anyway, the JIT started)
    fn._untyped()
    lk._lorikeet.backend_available({backend!r})  # starts the JIT, which the compile needs anyway
    sig = ["array(float64, 1d, C)", "array(float64, 1d, C)"] if sys.argv[1] == "small" else ["array(float64, 1d, C)", "float"]
    t0 = time.perf_counter()
    lk._lorikeet.cache_key(fn, sig)
    key = time.perf_counter() - t0
else:
    t0, c0 = time.perf_counter(), time.thread_time()
    fn(*args)
    first, cpu = time.perf_counter() - t0, time.thread_time() - c0
start = time.perf_counter() - t_start
print(json.dumps({{"first_ms": first * 1e3, "cpu_ms": cpu * 1e3, "key_ms": key * 1e3, "import_ms": t_import * 1e3,
                  "start_ms": start * 1e3,
                  "cache_ms": fn._cache_ms, "info": fn.cache_info(), "nvrtc": lk.runtime.stats()["compiles"],
                  "imported": sorted(m for m in set(sys.modules) - before if m.startswith("lorikeet."))}}))
"""


def run(script, name, cache, on, mode="call", thread=True):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "pyshim"), LORIKEET_CACHE_DIR=cache,
               LORIKEET_CACHE="1" if on else "0", LORIKEET_JIT_THREAD="1" if thread else "0")
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed Python code runs: from its .pyc
    p = subprocess.run([sys.executable, script, name, mode], env=env, capture_output=True, text=True, check=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def table(tmp, backend, runs):
    script = os.path.join(tmp, f"prog_{backend}.py")
    with open(script, "w") as f:
        f.write(PROGRAM.format(backend=backend))
    cache = os.path.join(tmp, f"cache_{backend}")
    print(f"backend {backend}, median of {runs} processes each")
    print(f"{'function':10} {'cold':>9} {'warm':>9} {'(its CPU)':>9} {'at call':>9} {'lookup':>8} {'key':>8} "
          f"{'key/cold':>8} {'miss':>8} {'miss/cold':>9} {'import':>8}")
    imported, starts = set(), []
    for name in ("small", "stencil"):
        cold = [run(script, name, cache, False) for _ in range(runs)]
        # a miss as a used cache sees it: its folders made and its last eviction pass recent (a copy of a folder
        # that the other function's code was saved to), not the first save of a new folder
        seed = os.path.join(tmp, f"seed_{backend}_{name}")
        run(script, "stencil" if name == "small" else "small", seed, True)
        misses = []
        for i in range(runs):
            shutil.copytree(seed, os.path.join(tmp, f"miss_{backend}_{name}_{i}"), symlinks=True)
            misses.append(run(script, name, os.path.join(tmp, f"miss_{backend}_{name}_{i}"), True))
        assert all(m["info"]["compiles"] == 1 for m in misses), misses[0]
        run(script, name, cache, True)  # fills the cache
        warm, at_call = [], []
        for _ in range(runs):  # alternated, so that both see the same load
            warm.append(run(script, name, cache, True))
            at_call.append(run(script, name, cache, True, thread=False))
        assert all(w["info"]["hits"] == 1 and w["info"]["compiles"] == 0 and w["nvrtc"] == 0 for w in warm + at_call), \
            warm[0]
        imported.update(m for w in warm for m in w["imported"] if m in ("lorikeet._key", "lorikeet._cache"))
        c = statistics.median(r["first_ms"] for r in cold)
        w = statistics.median(r["first_ms"] for r in warm)
        wc = statistics.median(r["cpu_ms"] for r in warm)
        w0 = statistics.median(r["first_ms"] for r in at_call)
        starts.append((name, [statistics.median(r[k] for r in rs) for rs in (warm, at_call) for k in ("import_ms", "start_ms")]))
        lookup = statistics.median(r["cache_ms"] for r in warm)
        k = statistics.median(run(script, name, cache, True, "key")["key_ms"] for _ in range(runs))
        m = statistics.median(r["cache_ms"] for r in misses)
        i = statistics.median(r["import_ms"] for r in cold + warm)
        print(f"{name:10} {c:6.2f} ms {w:6.2f} ms {wc:6.2f} ms {w0:6.2f} ms {lookup:5.2f} ms {k:5.2f} ms "
              f"{100 * k / c:7.1f}% {m:5.2f} ms {100 * m / c:8.1f}% {i:5.1f} ms")
    for name, (imp, start, imp0, start0) in starts:
        print(f"{name}: import {imp:.1f} ms, import to the first call's return {start:.1f} ms; with the JIT started at "
              f"the call: {imp0:.1f} ms, {start0:.1f} ms")
    print("a warm first call imported " + (", ".join(sorted(imported)) if imported else
                                           "none of the cache's Python modules (lorikeet._key, lorikeet._cache)"))


def gpu_unavailable():
    """None where the gpu backend can run (asked in a new process, as the rows run), else why not."""
    code = "import lorikeet as lk; ok = lk._lorikeet.backend_available('gpu'); print('' if ok is True else ok[1])"
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "pyshim"))
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    return (p.stdout.strip() or None) if p.returncode == 0 else p.stderr.strip().splitlines()[-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--backend", default="cpu")
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        table(tmp, opts.backend, opts.runs)
        if opts.backend != "gpu":
            why = gpu_unavailable()
            print()
            if why:
                print(f"backend gpu: left out ({why})")
            else:
                table(tmp, "gpu", opts.runs)


if __name__ == "__main__":
    main()
