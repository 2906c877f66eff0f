"""machine.py: what the results were measured on — CPU, cores, memory, GPU, versions — and the machine's
measured copy bandwidth (a STREAM-like copy timed in the same run), the physical limit for memory-bound work:
at the footprint of the 10M-element workloads (80 MiB per array) and with 1 GiB arrays (larger than any L3).

Everything here is read-only inspection of the machine; nothing is installed or configured.
"""
import os
import platform
import re
import resource
import shutil
import subprocess
import threading
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def cpu_model():
    m = re.search(r"^model name\s*:\s*(.+)$", _read("/proc/cpuinfo"), re.M)
    return m.group(1).strip() if m else (platform.processor() or platform.machine())


def cpu_flags():
    m = re.search(r"^flags\s*:\s*(.+)$", _read("/proc/cpuinfo"), re.M)
    flags = set(m.group(1).split()) if m else set()
    return [f for f in ("avx2", "fma", "avx512f") if f in flags]


def memory_gb():
    m = re.search(r"^MemTotal:\s*(\d+) kB", _read("/proc/meminfo"), re.M)
    return round(int(m.group(1)) / 2 ** 20, 1) if m else None


def gpus():
    if not shutil.which("nvidia-smi"):
        return []
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20).stdout
    except Exception:
        return []
    return [ln.strip() for ln in out.splitlines() if ln.strip()]


def _git(*args):
    try:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception:
        return ""


def lorikeet_version():
    """The commit, and whether the compiler's sources differ from it (benchmarks/ and docs/ don't count)."""
    commit = _git("rev-parse", "--short=12", "HEAD") or "unknown"
    changed = _git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!benchmarks", ":!docs")
    return {"commit": commit, "uncommitted_changes": bool(changed)}


def lorikeet_build():
    """When the lorikeet extension in the tree was last built: other engineers may rebuild it during a run."""
    import datetime
    import glob
    paths = glob.glob(os.path.join(REPO, "pyshim", "lorikeet", "_lorikeet*.so"))
    if not paths:
        return None
    mtime = max(os.path.getmtime(p) for p in paths)
    return datetime.datetime.fromtimestamp(mtime).astimezone().isoformat(timespec="seconds")


def versions():
    v = {"python": platform.python_version(), "numpy": np.__version__, "numba": None, "llvmlite": None,
         "lorikeet": lorikeet_version(), "lorikeet_build": lorikeet_build()}
    try:
        import numba
        import llvmlite
        v["numba"], v["llvmlite"] = numba.__version__, llvmlite.__version__
    except Exception:
        pass
    try:
        import matplotlib
        v["matplotlib"] = matplotlib.__version__
    except Exception:
        pass
    return v


def describe():
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "simd": cpu_flags(), "memory_gb": memory_gb(),
            "l3_cache_mb": l3_cache_mb(),
            "gpus": gpus(), "os": f"{platform.system()} {platform.release()}", "hostname": platform.node()}


def slug(machine):
    """A stable file-name tag for a machine: CPU model, core count, and GPU if any."""
    text = machine["cpu"].lower()
    text = re.sub(r"\(r\)|\(tm\)|cpu|processor|@.*$", " ", text)
    text = re.sub(r"[^a-z0-9]+", "-", text).strip("-")
    tag = f"{text}-{machine['cores']}c"
    if machine.get("gpus"):
        tag += "-" + re.sub(r"[^a-z0-9]+", "-", machine["gpus"][0].lower()).strip("-")
    return tag


def l3_cache_mb():
    size = _read("/sys/devices/system/cpu/cpu0/cache/index3/size").strip()
    m = re.match(r"(\d+)([KMG]?)", size)
    if not m:
        return None
    return int(m.group(1)) * {"K": 1 / 1024, "M": 1, "G": 1024, "": 1 / 2 ** 20}[m.group(2)]


def copy_bandwidth(nbytes=80 * 2 ** 20, repeats=10, threads=1):
    """GB/s of np.copyto between two arrays of nbytes, best of `repeats` (STREAM counts read + write bytes).
    With threads > 1 the arrays are cut into that many contiguous parts, each copied by its own Python thread
    (np.copyto releases the GIL), started together: what all cores reach when they stream at once."""
    src = np.empty(nbytes // 8)
    src.fill(1.5)
    dst = np.empty_like(src)
    np.copyto(dst, src)   # touch the pages
    bounds = np.linspace(0, src.size, threads + 1).astype(int)
    parts = [(dst[lo:hi], src[lo:hi]) for lo, hi in zip(bounds[:-1], bounds[1:])]
    best = float("inf")
    if threads == 1:
        for _ in range(repeats):
            t0 = time.perf_counter()
            np.copyto(dst, src)
            best = min(best, time.perf_counter() - t0)
    else:
        start, done = threading.Barrier(threads + 1), threading.Barrier(threads + 1)

        def copier(d, s):
            for _ in range(repeats):
                start.wait()
                np.copyto(d, s)
                done.wait()

        workers = [threading.Thread(target=copier, args=p) for p in parts]
        for w in workers:
            w.start()
        for _ in range(repeats):
            t0 = time.perf_counter()   # before the release: the workers wait there already, this thread is last
            start.wait()
            done.wait()
            best = min(best, time.perf_counter() - t0)
        for w in workers:
            w.join()
    who = "one thread" if threads == 1 else f"{threads} threads, one part each"
    return {"gbs": 2 * src.nbytes / best / 1e9, "bytes": src.nbytes, "best_s": best, "threads": threads,
            "method": f"np.copyto of {src.nbytes // 2 ** 20} MiB float64 by {who}, best of {repeats}; "
                      "read+write bytes"}


class BackgroundLoad:
    """How many cores other processes kept busy while we measured: the machine's busy CPU time (/proc/stat)
    minus this process's and its finished workers' own, over the wall time. On a shared machine it says how
    much to trust a row (multi-threaded BLAS suffers most: its threads wait on a preempted sibling)."""

    def __init__(self):
        self.start = self._sample()

    @staticmethod
    def _sample():
        fields = _read("/proc/stat").split("\n", 1)[0].split()[1:]
        ticks = [int(x) for x in fields] if fields else [0] * 8
        busy = sum(ticks) - ticks[3] - (ticks[4] if len(ticks) > 4 else 0)   # minus idle and iowait
        own = sum(getattr(resource.getrusage(who), f) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
                  for f in ("ru_utime", "ru_stime"))
        return time.time(), busy / os.sysconf("SC_CLK_TCK"), own

    def cores(self):
        (t0, busy0, own0), (t1, busy1, own1) = self.start, self._sample()
        if t1 - t0 <= 0:
            return None
        return round(max(0.0, (busy1 - busy0) - (own1 - own0)) / (t1 - t0), 2)
