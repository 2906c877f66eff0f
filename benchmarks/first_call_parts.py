"""python -m benchmarks.first_call_parts [--runs N] [--function small|stencil]: where a warm first call's time goes.
Not a timed test; the figure itself is benchmarks.cache_hit's `warm` column, which this splits.

In fresh processes whose disk cache holds the function's code (filled first), the parts of the first call taken one
by one, medians over --runs processes, the JIT started on its thread at import (as lorikeet does) and with
LORIKEET_JIT_THREAD=0 (the call starts it), alternated so that both see the same load:
  import     `import lorikeet` (mostly the dynamic loader mapping LLVM's library and running its constructors)
  frontend   the function's source read and parsed, its free names resolved, its untyped IR made (f._untyped())
  JIT        what the first use still waits for of the JIT's start, or does (backend_available)
  lookup     of the call: the cache's key, the entry read and checked, the object loaded into the JIT (_cache_ms)
  rest       of the call: argument types, typing and the IR passes, the compilation's name, the call itself
  total      frontend + JIT + call: the first call's time when these happen inside it
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from .cache_hit import FUNCTIONS, ROOT

PROGRAM = """\
import json, sys, time
import numpy as np
t0 = time.perf_counter()
import lorikeet as lk
t1 = time.perf_counter()

""" + FUNCTIONS.format(backend="cpu") + """t2 = time.perf_counter()
fn._untyped()
t3 = time.perf_counter()
lk._lorikeet.backend_available("cpu")
t4 = time.perf_counter()
fn(*args)
t5 = time.perf_counter()
ms = lambda a, b: (b - a) * 1e3
print(json.dumps({"import": ms(t0, t1), "frontend": ms(t2, t3), "JIT": ms(t3, t4), "lookup": fn._cache_ms,
                  "rest": ms(t4, t5) - fn._cache_ms, "total": ms(t2, t5), "info": fn.cache_info()}))
"""

PARTS = ("import", "frontend", "JIT", "lookup", "rest", "total")


def run(script, name, cache, thread):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "pyshim"), LORIKEET_CACHE_DIR=cache, LORIKEET_CACHE="1",
               LORIKEET_JIT_THREAD="1" if thread else "0")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    p = subprocess.run([sys.executable, script, name], env=env, capture_output=True, text=True, check=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--function", default="small", choices=("small", "stencil"))
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "prog.py")
        with open(script, "w") as f:
            f.write(PROGRAM)
        cache = os.path.join(tmp, "cache")
        run(script, opts.function, cache, True)  # fills the cache
        rows = {True: [], False: []}
        for _ in range(opts.runs):
            for thread in (True, False):
                r = run(script, opts.function, cache, thread)
                assert r["info"]["hits"] == 1 and r["info"]["compiles"] == 0, r
                rows[thread].append(r)
    print(f"{opts.function}: a warm first call's parts, ms, median of {opts.runs} processes each")
    print(f"{'the JIT started':28}" + "".join(f"{p:>10}" for p in PARTS))
    for thread, label in ((True, "on its thread at import"), (False, "by the call")):
        print(f"{label:28}" + "".join(f"{statistics.median(r[p] for r in rows[thread]):10.3f}" for p in PARTS))


if __name__ == "__main__":
    main()
