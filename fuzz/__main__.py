"""python -m fuzz: the differential fuzzer's command line (make fuzz N=... SEED=... JOBS=...; make fuzz REPLAY=path).

    python -m fuzz -n 1000 --seed 0 --jobs 2     programs with seeds 0..999, in worker processes
    python -m fuzz --replay fuzz/findings/x.py   one saved program again, printing every difference

The parent hands out chunks of seeds to worker processes (python -m fuzz --worker START COUNT), each of which
prints a line of JSON as it starts a program and one with its verdict. A worker that dies by a signal (a crash
in compiled code) or falls silent for --timeout seconds (a hang) had the program of its last started seed: the
parent regenerates that program from its seed, saves it, shrinks it in subprocesses, and carries on with the
next seed in a new worker. Each chunk runs in a fresh process, so compiled code does not pile up.
"""
import argparse
import json
import os
import select
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter

from . import gen, known

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def save_finding(out_dir, seed, kind, backend, diffs, source, bug):
    """Writes a finding's (minimal) program with a header naming its seed, kind and differences."""
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f"{kind}-{backend}-seed{seed}.py")
    head = [f"# lorikeet fuzz finding: seed {seed}, {kind} on {backend}"
            + (f" (known bug {bug.ident}: {bug.ref})" if bug else " (new)"),
            f"# python -m fuzz --replay {os.path.relpath(path, ROOT)}   (make fuzz REPLAY=...)"]
    head += ["#   " + " ".join(m.split())[:400] for _, m in diffs[:6]]
    with open(path, "w") as fh:
        fh.write("\n".join(head) + "\n" + source)
    return path


def classify(seed, diffs, source, out_dir, backends, do_shrink=True, budget=300):
    """Shrinks a failing program for its first difference and saves it; returns the verdict record."""
    from . import shrink
    kind, msg = diffs[0]
    backend = next((b for b in backends if msg.startswith(b + ":")), backends[0])
    small, runs = shrink.shrink(source, kind, backend, budget, msg) if do_shrink else (source, 0)
    if small != source:  # the differences of the minimal program, which its file shows
        from . import check
        fd, tmp = tempfile.mkstemp(suffix=".py", prefix="fuzz_small_")
        os.close(fd)
        with open(tmp, "w") as fh:
            fh.write(small)
        try:
            diffs = [d for d in check.check_file(tmp, backends) if d[0] == kind] or diffs
        finally:
            os.unlink(tmp)
    import ast
    body = ast.unparse(shrink._f(ast.parse(small)))
    bug = known.known_bug(kind, body, diffs[0][1])
    path = save_finding(out_dir, seed, kind, backend, diffs, small, bug) if out_dir else None
    return {"seed": seed, "kind": kind, "backend": backend, "diffs": diffs[:6], "known": bug.ident if bug else None,
            "file": path, "shrink_runs": runs}


def check_seed(seed, backends, out_dir, tmpdir, do_shrink=True, budget=300):
    """Generates, runs and compares one program; a record with 'ok' or the finding."""
    from . import check
    prog = gen.generate(seed)
    source = prog.source()
    path = os.path.join(tmpdir, f"prog_{seed}.py")
    with open(path, "w") as fh:
        fh.write(source)
    try:
        diffs = check.check_file(path, backends)
    finally:
        os.unlink(path)
    if not diffs:
        return {"seed": seed, "ok": True}
    return classify(seed, diffs, source, out_dir, backends, do_shrink, budget)


def worker(start, count, backends, out_dir):
    import lorikeet as lk
    lk.set_parallel_threshold(0)
    with tempfile.TemporaryDirectory(prefix="lkfuzz_") as tmpdir:
        # a test hook: the worker kills itself by SIGSEGV at this seed, as a crash in compiled code would
        crash_at = int(os.environ.get("LKFUZZ_SELFTEST_CRASH_SEED", "-1"))
        for seed in range(start, start + count):
            print(json.dumps({"start": seed}), flush=True)
            if seed == crash_at:
                import signal
                os.kill(os.getpid(), signal.SIGSEGV)
            try:
                rec = check_seed(seed, backends, out_dir, tmpdir)
            except Exception as e:  # a bug of the fuzzer itself: reported, not hidden
                rec = {"seed": seed, "kind": "harness", "diffs": [["harness", repr(e)]], "known": None}
            print(json.dumps(rec), flush=True)


class Parent:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.chunks = []
        self.records = []
        self.done = 0
        self.t0 = time.time()

    def crash(self, seed, kind, backends):
        from . import shrink
        src = gen.generate(seed).source()
        small = src
        if not self.args.no_shrink:
            for be in backends:  # find the backend that crashes, then shrink on it
                fd, tmp = tempfile.mkstemp(suffix=".py")
                os.close(fd)
                with open(tmp, "w") as fh:
                    fh.write(src)
                fails = shrink.still_fails(tmp, kind, be)
                os.unlink(tmp)
                if fails:
                    small, _ = shrink.shrink(src, kind, be, budget=80)
                    break
        diffs = [(kind, f"{','.join(backends)}: the worker died ({kind})")]
        path = save_finding(self.args.out, seed, kind, "+".join(backends), diffs, small, None)
        return {"seed": seed, "kind": kind, "backend": ",".join(backends), "diffs": diffs, "known": None,
                "file": path}

    def run_chunk(self, start, count):
        a = self.args
        while count > 0:
            cmd = [sys.executable, "-m", "fuzz", "--worker", str(start), str(count), "--backends",
                   ",".join(a.backends), "--out", a.out]
            env = dict(os.environ, LORIKEET_PARALLEL_THRESHOLD="0",
                       PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "pyshim"), os.environ.get("PYTHONPATH", "")]))
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT, env=env)
            current, hung = None, False
            while True:
                ready, _, _ = select.select([p.stdout], [], [], a.timeout)
                if not ready:
                    hung = True
                    p.kill()
                    break
                line = p.stdout.readline()
                if not line:
                    break
                rec = json.loads(line)
                if "start" in rec:
                    current = rec["start"]
                    continue
                current = None
                self.record(rec)
                start, count = rec["seed"] + 1, start + count - rec["seed"] - 1
            p.wait()
            if current is None:
                if p.returncode != 0 and count > 0:
                    self.record({"seed": start, "kind": "harness", "diffs": [["harness", f"worker exit {p.returncode}"]],
                                 "known": None})
                    start, count = start + 1, count - 1
                continue
            kind = "hang" if hung else "crash" if p.returncode < 0 else "harness"
            self.record(self.crash(current, kind, a.backends))
            start, count = current + 1, start + count - current - 1

    def record(self, rec):
        with self.lock:
            self.records.append(rec)
            self.done += 1
            if not rec.get("ok"):
                tag = f"known {rec['known']}" if rec.get("known") else "NEW"
                print(f"seed {rec['seed']}: {rec['kind']} ({tag}) {rec['diffs'][0][1][:160]}"
                      + (f"\n    saved {os.path.relpath(rec['file'], ROOT)}" if rec.get("file") else ""), flush=True)
            if self.done % 500 == 0:
                print(f"... {self.done} programs, {time.time() - self.t0:.0f} s", flush=True)

    def run(self):
        a = self.args
        chunk = max(1, min(a.chunk, a.n // max(1, a.jobs) or 1))
        self.chunks = [(s, min(chunk, a.seed + a.n - s)) for s in range(a.seed, a.seed + a.n, chunk)]

        def loop():
            while True:
                with self.lock:
                    if not self.chunks:
                        return
                    start, count = self.chunks.pop(0)
                self.run_chunk(start, count)
        def stop(signum, frame):  # a run stopped by Ctrl-C or kill still says what it found
            print(f"\nstopped by signal {signum}", flush=True)
            os._exit(self.summary())
        import signal
        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        threads = [threading.Thread(target=loop, daemon=True) for _ in range(a.jobs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return self.summary()

    def summary(self):
        bad = [r for r in self.records if not r.get("ok")]
        new = [r for r in bad if not r.get("known")]
        print(f"\n{len(self.records)} programs (from the seeds {self.args.seed}..{self.args.seed + self.args.n - 1}) on "
              f"{', '.join(self.args.backends)} in {time.time() - self.t0:.0f} s: {len(self.records) - len(bad)} agree, "
              f"{len(bad) - len(new)} known bugs, {len(new)} new")
        by = Counter((r["kind"], r.get("known") or "new") for r in bad)
        for (kind, k), n in sorted(by.items()):
            print(f"  {kind:18} {k:8} {n}")
        return 1 if new else 0


def replay(path, backends, quiet):
    import numpy
    from . import check
    import lorikeet as lk
    lk.set_parallel_threshold(0)
    outside = check.documented_difference(os.path.abspath(path))
    if outside is not None:
        print(f"not compared: with NumPy {numpy.__version__} the reference run shows a documented difference, "
              f"{outside.ident} ({outside.doc})")
        return 0
    diffs = check.check_file(os.path.abspath(path), backends)
    if not quiet:
        import ast
        from . import shrink
        with open(path) as fh:
            body = ast.unparse(shrink._f(ast.parse(fh.read())))
        for kind, msg in diffs:
            bug = known.known_bug(kind, body, msg)
            print(f"{kind}: {msg}" + (f"\n    known bug {bug.ident}: {bug.text} ({bug.ref})" if bug else ""))
        print("lorikeet agrees with CPython+NumPy" if not diffs else f"{len(diffs)} difference(s)")
    return 1 if diffs else 0


def triage(directory):
    """Attributes the saved findings in directory again with today's fuzz/known.py (after a fix, or a new entry),
    without running them; prints the counts by kind and entry, and the files of the new ones."""
    import ast
    import re
    from . import shrink
    counts, new = Counter(), []
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(directory, name)) as fh:
            text = fh.read()
        m = re.match(r"# lorikeet fuzz finding: seed \d+, ([a-z-]+) on", text)
        msg = next((line[4:].strip() for line in text.splitlines() if line.startswith("#   ")), "")
        if not m:
            continue
        kind = m.group(1)
        try:
            body = ast.unparse(shrink._f(ast.parse(text)))
        except (SyntaxError, StopIteration):
            body = ""
        bug = known.known_bug(kind, body, msg)
        counts[(kind, bug.ident if bug else "new")] += 1
        if not bug:
            new.append(f"{name}: {msg[:160]}")
    for (kind, ident), n in sorted(counts.items()):
        print(f"  {kind:18} {ident:13} {n}")
    print("new:" if new else "no new findings", *new, sep="\n  ")
    return 1 if new else 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m fuzz", description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=1000, help="how many programs")
    ap.add_argument("--seed", type=int, default=0, help="the first seed (programs use seed, seed+1, ...)")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes")
    ap.add_argument("--chunk", type=int, default=200, help="programs per worker process")
    ap.add_argument("--backends", default=None, help="comma-separated (default: cpu,openmp and gpu if usable)")
    ap.add_argument("--out", default=os.path.join(ROOT, "fuzz", "findings"), help="where findings are saved")
    ap.add_argument("--timeout", type=float, default=120, help="seconds without progress that make a hang")
    ap.add_argument("--no-shrink", action="store_true")
    ap.add_argument("--replay", help="run one saved program file and print its differences")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--triage", help="attribute the findings saved in a folder again with fuzz/known.py")
    ap.add_argument("--worker", nargs=2, type=int, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.backends:
        args.backends = args.backends.split(",")
    else:
        from .check import available_backends
        args.backends = available_backends()
    if args.triage:
        return triage(args.triage)
    if args.replay:
        return replay(args.replay, args.backends, args.quiet)
    if args.worker:
        worker(args.worker[0], args.worker[1], args.backends, args.out)
        return 0
    return Parent(args).run()


if __name__ == "__main__":
    sys.exit(main())
