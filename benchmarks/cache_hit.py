"""python -m benchmarks.cache_hit [--runs N]: what the on-disk code cache saves (issue 11). Not a timed test.

For each function below, in fresh processes: the first call with the cache off (a cold compile) against the first
call with a warm cache (the key, the store's read, typing, and the object loaded without LLVM's optimiser or code
generator), medians over --runs processes; and, inside one process, the key's cost (preimage + SHA-256) against
the cold compile (taken in a new process: it includes importing lorikeet/_key.py and the toolchain's text). The first call in a process also starts the JIT (about 1.2 ms of CPU here), in both columns.
The warm first call is given twice: wall time, and the CPU time of the calling thread (time.thread_time), which a
machine shared with other work inflates much less than the wall time.

Where a GPU can be used (and --backend is not gpu already), the same table follows for backend="gpu": the cold first
call runs NVRTC and LLVM (and starts CUDA), the warm one loads the host code and the kernels' image from the entry
and runs neither (checked: no NVRTC run, no compile). Without a GPU that part says why it was left out.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROGRAM = """\
import json, sys, time
import numpy as np
t_import = time.perf_counter()
import lorikeet as lk
t_import = time.perf_counter() - t_import

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
key = first = cpu = 0.0
if sys.argv[2] == "key":
    # what a miss adds to a compile, in a new process: the key's module, the toolchain's text, the preimage and
    # its hash (the function's source and free names are read for its untyped IR anyway, the JIT started)
    fn._untyped()
    lk._lorikeet.backend_available({backend!r})  # starts the JIT, which the compile needs anyway
    sig = ["array(float64, 1d, C)", "array(float64, 1d, C)"] if sys.argv[1] == "small" else ["array(float64, 1d, C)", "float"]
    t0 = time.perf_counter()
    from lorikeet import _key
    _key.sha256(_key.preimage(fn, sig)).hexdigest()
    key = time.perf_counter() - t0
else:
    t0, c0 = time.perf_counter(), time.thread_time()
    fn(*args)
    first, cpu = time.perf_counter() - t0, time.thread_time() - c0
print(json.dumps({{"first_ms": first * 1e3, "cpu_ms": cpu * 1e3, "key_ms": key * 1e3, "import_ms": t_import * 1e3,
                  "info": fn.cache_info(), "nvrtc": lk.runtime.stats()["compiles"]}}))
"""


def run(script, name, cache, on, mode="call"):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "pyshim"), LORIKEET_CACHE_DIR=cache,
               LORIKEET_CACHE="1" if on else "0")
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed Python code runs: from its .pyc
    p = subprocess.run([sys.executable, script, name, mode], env=env, capture_output=True, text=True, check=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def table(tmp, backend, runs):
    script = os.path.join(tmp, f"prog_{backend}.py")
    with open(script, "w") as f:
        f.write(PROGRAM.format(tests=os.path.join(ROOT, "tests"), backend=backend))
    cache = os.path.join(tmp, f"cache_{backend}")
    print(f"backend {backend}, median of {runs} processes each")
    print(f"{'function':10} {'cold first call':>16} {'warm first call':>16} {'(its CPU)':>10} {'key':>8} "
          f"{'key/cold':>9} {'import':>8}")
    for name in ("small", "stencil"):
        cold = [run(script, name, cache, False) for _ in range(runs)]
        run(script, name, cache, True)  # fills the cache
        warm = [run(script, name, cache, True) for _ in range(runs)]
        assert all(w["info"]["hits"] == 1 and w["info"]["compiles"] == 0 and w["nvrtc"] == 0 for w in warm), warm[0]
        c = statistics.median(r["first_ms"] for r in cold)
        w = statistics.median(r["first_ms"] for r in warm)
        wc = statistics.median(r["cpu_ms"] for r in warm)
        k = statistics.median(run(script, name, cache, True, "key")["key_ms"] for _ in range(runs))
        i = statistics.median(r["import_ms"] for r in cold + warm)
        print(f"{name:10} {c:13.2f} ms {w:13.2f} ms {wc:7.2f} ms {k:5.2f} ms {100 * k / c:8.1f}% {i:5.1f} ms")


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
