"""harness.py: runs one workload with every tool, in a worker process, and measures it.

For each tool: build the callable, make the first call (for a JIT: compile + one run) and time it, check the
result against the NumPy reference and that no input was modified, and only then time the steady state (one
warm-up call, then the median of repeats). A wrong result is reported as a mismatch and never timed.

The worker writes its state to a JSON file after every tool, naming the tool it is about to run, so that the
parent (__main__.py) can tell which tool crashed or hung the process and go on without it. Nothing here
catches signals: a crash is the parent's to report.
"""
import atexit
import gc
import importlib.util
import inspect
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import types
import warnings

import numpy as np

from .spec import Workload

# Steady-state policy per mode: at least min repeats, at most max, stopping early once budget_s is spent.
POLICY = {
    "quick": dict(min_repeats=3, max_repeats=9, budget_s=1.0, dispatch_calls=20_000, compile_repeats=5),
    "full": dict(min_repeats=5, max_repeats=21, budget_s=3.0, dispatch_calls=100_000, compile_repeats=9),
}
SLOW_SINGLE_RUN_S = 2.0   # pure Python slower than this on its first call is not repeated

NUMPY, PYTHON, NUMBA, NUMBA_PAR = "numpy", "python", "numba", "numba-parallel"


def lorikeet_tool(backend):
    return f"lorikeet:{backend}"


def tools_for(w: Workload, backends, mode):
    """The tools that run workload w, in running order (lorikeet early: if it crashes, the rest re-run)."""
    base = [NUMPY, NUMBA, NUMBA_PAR, PYTHON] if w.tools is None else list(w.tools)
    tools = [t for t in base if t == NUMPY] + [lorikeet_tool(b) for b in backends]
    tools += [t for t in base if t not in (NUMPY,)]
    return tools


# ---- building each tool's callable ----

class Unsupported(Exception):
    """The tool refuses the workload: not supported by it, or not available here (message says which)."""


def _first_line(msg):
    """The first line of an error message."""
    lines = [ln.strip() for ln in str(msg).splitlines() if ln.strip()]
    return lines[0] if lines else ""


def _numba_summary(msg):
    """Numba's first informative line: past the pipeline stage, with the line it introduces ('...:')."""
    lines = [ln.strip() for ln in str(msg).splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith("Failed in ")] or lines or [""]
    if lines[0].endswith(":") and len(lines) > 1:
        return f"{lines[0]} {lines[1]}"
    return lines[0]


def _numba():
    try:
        import numba
    except Exception as e:  # not installed, or broken
        raise Unsupported(f"unavailable: numba does not import ({_first_line(e)})")
    return numba


def numba_callable(fn, helpers, parallel):
    """njit(fn) where the module-level helpers fn calls are njit-compiled too (as a Numba user would decorate
    them): a copy of fn whose globals map each helper's name to its jitted version."""
    numba = _numba()
    glb = dict(fn.__globals__)
    for h in helpers:
        glb[h.__name__] = numba.njit(types.FunctionType(h.__code__, glb, h.__name__, h.__defaults__))
    if "prange" in fn.__code__.co_names:
        glb["prange"] = numba.prange   # the workload's lk.prange: Numba's own spelling of the same promise
    copy = types.FunctionType(fn.__code__, glb, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__module__ = fn.__module__
    copy.__qualname__ = fn.__qualname__
    return numba.njit(parallel=parallel)(copy)


def build(tool, w: Workload, fn=None):
    fn = fn or w.kernel
    if tool == NUMPY:
        return w.reference
    if tool == PYTHON:
        return fn
    if tool in (NUMBA, NUMBA_PAR):
        if w.peer_kernel is not None:   # the loop form: Numba's peer of lorikeet's array form
            return numba_callable(w.peer_kernel, w.peer_helpers, parallel=(tool == NUMBA_PAR))
        return numba_callable(fn, w.helpers, parallel=(tool == NUMBA_PAR))
    if tool.startswith("lorikeet:"):
        try:
            import lorikeet as lk
        except Exception as e:
            raise Unsupported(f"unavailable: lorikeet does not import ({_first_line(e)})")
        return lk.jit(fn, backend=tool.split(":", 1)[1])
    raise ValueError(f"unknown tool {tool}")


def classify_error(tool, exc):
    """The status of a tool whose first call raised exc."""
    name = type(exc).__name__
    if tool.startswith("lorikeet:"):
        if name == "CompileError":
            return "not supported yet: " + _first_line(exc)
        if name == "BackendUnavailable":
            return "unavailable: " + _first_line(exc)
        return f"error: {name}: {_first_line(exc)}"
    if tool in (NUMBA, NUMBA_PAR):
        numba_errors = ("TypingError", "UnsupportedError", "NumbaNotImplementedError", "LoweringError",
                        "UnsupportedRewriteError", "NumbaValueError", "NumbaTypeError")
        if name in numba_errors:
            return "not supported: " + _numba_summary(exc)
        if name == "ImportError":   # e.g. np.dot needs SciPy's BLAS bindings, absent from this venv
            return "unavailable: " + _first_line(exc)
    return f"error: {name}: {_first_line(exc)}"


# ---- checking ----

def compare(result, expected, w: Workload):
    """None if result matches the NumPy reference within the workload's tolerance, else what differs."""
    if w.check is not None:
        return w.check(result, expected)
    if isinstance(expected, tuple):
        if not isinstance(result, tuple) or len(result) != len(expected):
            return f"returned {type(result).__name__}, expected a tuple of {len(expected)}"
        for k, (r, e) in enumerate(zip(result, expected)):
            diff = compare(r, e, w)
            if diff:
                return f"element {k}: {diff}"
        return None
    if isinstance(expected, np.ndarray):
        if not isinstance(result, np.ndarray):
            return f"returned {type(result).__name__}, expected an array"
        if result.shape != expected.shape:
            return f"shape {result.shape}, expected {expected.shape}"
        if result.dtype != expected.dtype:
            return f"dtype {result.dtype}, expected {expected.dtype}"
    r, e = np.asarray(result, dtype=np.float64), np.asarray(expected, dtype=np.float64)
    if np.allclose(r, e, rtol=w.rtol, atol=w.atol, equal_nan=True):
        return None
    err = np.abs(r - e)
    k = int(np.nanargmax(err)) if err.size else 0
    return (f"max abs error {np.nanmax(err):.3g} at flat index {k} "
            f"(got {r.flat[k]!r}, expected {e.flat[k]!r}; rtol {w.rtol}, atol {w.atol})")


def copy_args(args):
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def modified_input(args, pristine):
    for k, (a, p) in enumerate(zip(args, pristine)):
        if isinstance(p, np.ndarray) and not np.array_equal(a, p, equal_nan=True):
            return k
    return None


# ---- timing ----

def timed_call(fn, args):
    t0 = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - t0, result


def steady_times(fn, args, policy):
    """One warm-up call, then repeats until min_repeats are done and max_repeats or the budget is reached.
    A warm-up call that alone exceeds the budget is the only sample (a single run, reported as such)."""
    warm_s = timed_call(fn, args)[0]
    if warm_s >= policy["budget_s"]:
        return [warm_s]
    gc.collect()
    times, start = [], time.perf_counter()
    while len(times) < policy["max_repeats"]:
        times.append(timed_call(fn, args)[0])
        if len(times) >= policy["min_repeats"] and time.perf_counter() - start >= policy["budget_s"]:
            break
    return times


def per_call_times(fn, args, calls, batches=5):
    """Seconds per call of fn(*args) from a Python loop, one figure per batch of `calls` calls."""
    out = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        out.append((time.perf_counter() - t0) / calls)
    return out


_fresh_dir = None


def fresh_function(fn, tag, edits=()):
    """A new function object from fn's source, renamed, in a new module file: no cache can know it. edits: (old,
    new) text replacements in the source, for a function whose code (not only its name) is new."""
    global _fresh_dir
    if _fresh_dir is None:
        _fresh_dir = tempfile.mkdtemp(prefix="lk-bench-")
        atexit.register(shutil.rmtree, _fresh_dir, True)
    name = f"{fn.__name__}_{tag}"
    src = inspect.getsource(fn).replace(f"def {fn.__name__}(", f"def {name}(", 1)
    for old, new in edits:
        src = src.replace(old, new)
    path = os.path.join(_fresh_dir, f"{name}.py")
    with open(path, "w") as f:
        f.write(f"import math\nimport numpy as np\n\n\n{src}")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod   # inspect.getsource finds the module's file through sys.modules
    spec.loader.exec_module(mod)
    return getattr(mod, name)


# ---- one tool on one workload ----

def measure(tool, w: Workload, args, pristine, expected, mode, size):
    """The result record of one tool: status, and times when the result was right."""
    policy = POLICY[mode]
    if tool == PYTHON and mode not in w.python_modes:
        return {"status": "skipped: too slow"}
    if w.kind == "compile":
        return measure_compile(tool, w, args, expected, policy)
    try:
        fn = build(tool, w)
        first_s, result = timed_call(fn, args)
    except Unsupported as e:
        return {"status": str(e)}
    except Exception as e:
        return {"status": classify_error(tool, e)}
    k = modified_input(args, pristine)
    if k is not None:
        restore(args, pristine)
        return {"status": f"MISMATCH: modified its input argument {k}"}
    diff = compare(result, expected, w)
    if diff:
        return {"status": f"MISMATCH: {diff}"}
    del result
    try:
        return time_steady(tool, w, fn, args, first_s, policy, size)
    except Exception as e:   # a later call failing where the first succeeded
        return {"status": "error on a repeated call: " + classify_error(tool, e)}


def time_steady(tool, w, fn, args, first_s, policy, size):
    rec = {"status": "ok", "first_s": first_s}
    if w.kind == "dispatch":
        times = per_call_times(fn, args, policy["dispatch_calls"])
        rec.update(steady_s=statistics.median(times), repeats=len(times), calls_per_repeat=policy["dispatch_calls"])
    elif tool == PYTHON and first_s > SLOW_SINGLE_RUN_S:
        rec.update(steady_s=first_s, repeats=1, note="single run")
    else:
        times = steady_times(fn, args, policy)
        rec.update(steady_s=statistics.median(times), min_s=min(times), repeats=len(times))
        if len(times) == 1:
            rec["note"] = "single run"
    if w.bytes_moved is not None:
        rec["gbs"] = w.bytes_moved(size) / rec["steady_s"] / 1e9
    return rec


def restore(args, pristine):
    for a, p in zip(args, pristine):
        if isinstance(p, np.ndarray):
            a[...] = p


def measure_compile(tool, w: Workload, args, expected, policy):
    """First-call time of fresh copies of the kernel (the median), then the steady time of the last copy."""
    firsts = []
    try:
        for r in range(policy["compile_repeats"]):
            fn = build(tool, w, fresh_function(w.kernel, f"{tool.replace(':', '_').replace('-', '_')}_{r}"))
            t, result = timed_call(fn, args)
            firsts.append(t)
            if r == 0:
                diff = compare(result, expected, w)
                if diff:
                    return {"status": f"MISMATCH: {diff}"}
    except Unsupported as e:
        return {"status": str(e)}
    except Exception as e:
        return {"status": classify_error(tool, e)}
    times = steady_times(fn, args, policy)
    return {"status": "ok", "first_s": statistics.median(firsts), "first_all_s": firsts,
            "steady_s": statistics.median(times), "repeats": len(firsts)}


# ---- the worker's two jobs: a workload, or a sweep ----

def warm_up(tools):
    """Compile one throwaway function with each JIT, so that no workload's first call pays for the JIT's own
    start-up (LLVM initialisation, Numba's type registry)."""
    def _warm(a):
        return a[0] + 1.0
    arr = np.ones(3)
    for tool in tools:
        if tool in (NUMBA, NUMBA_PAR) or tool.startswith("lorikeet:"):
            try:
                build(tool, Workload("warm", "", _warm, _warm, None, {}, str))(arr)
            except Exception:
                pass   # the workload itself will report it


class StateFile:
    """The worker's progress, rewritten atomically after each step for the parent to read."""

    def __init__(self, path, data):
        self.path, self.data = path, data

    def start(self, key):
        """Names the tool about to run; the step count tells the parent a new step began under the same name."""
        self.data["running"] = key
        self.data["step"] = self.data.get("step", 0) + 1
        self.save()

    def save(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.data, f)
        os.replace(tmp, self.path)


def run_workload(w: Workload, mode, tools, skip, state_path, progress):
    size = w.sizes[mode]
    state = StateFile(state_path, {"results": {}, "running": None})
    warm_up(tools)
    progress(f"{w.name}: making inputs ({w.describe(size)})")
    args = w.make_inputs(size)
    pristine = copy_args(args)
    expected = w.reference(*args)
    for tool in tools:
        if tool in skip:
            continue
        state.start(tool)
        progress(f"{w.name}: {tool} ...")
        rec = measure(tool, w, args, pristine, expected, mode, size)
        state.data["results"][tool] = rec
        state.data["running"] = None
        state.save()
        progress(f"{w.name}: {tool}: {summarize(rec)}")


def run_sweep(sweep, mode, tools, skip, state_path, progress):
    """Every (workload, tool) of the sweep at every size: steady times only, fewer repeats."""
    policy = dict(POLICY[mode], min_repeats=3, max_repeats=5, budget_s=0.5)
    state = StateFile(state_path, {"results": {}, "running": None})
    warm_up(tools)
    ref = sweep.workloads[0]
    for size in sweep.sizes[mode]:
        args = ref.make_inputs(size)
        pristine = copy_args(args)
        expected = ref.reference(*args)
        for w in sweep.workloads:
            for tool in tools:
                if tool == PYTHON or (tool == NUMPY and w is not ref):
                    continue
                key = tool if tool == NUMPY else f"{tool}|{w.name}"
                series = state.data["results"].setdefault(key, {"sizes": [], "steady_s": [], "status": []})
                if key in skip or any(s != "ok" for s in series["status"]):
                    continue   # crashed before, or already failed at a smaller size: don't retry each size
                state.start(key)
                rec = measure_sweep_point(tool, w, args, pristine, expected, policy)
                series["sizes"].append(sweep.x_of(size))
                series["steady_s"].append(rec.get("steady_s"))
                series["status"].append(rec["status"])
                state.data["running"] = None
                state.save()
                progress(f"sweep {sweep.name} x={sweep.x_of(size)}: {key}: {summarize(rec)}")


_sweep_fns = {}


def measure_sweep_point(tool, w, args, pristine, expected, policy):
    try:
        fn = _sweep_fns.get((tool, w.name)) or build(tool, w)
        _sweep_fns[(tool, w.name)] = fn
        result = fn(*args)
    except Unsupported as e:
        return {"status": str(e)}
    except Exception as e:
        return {"status": classify_error(tool, e)}
    if modified_input(args, pristine) is not None:
        restore(args, pristine)
        return {"status": "MISMATCH: modified an input"}
    diff = compare(result, expected, w)
    if diff:
        return {"status": f"MISMATCH: {diff}"}
    times = steady_times(fn, args, policy)
    return {"status": "ok", "steady_s": statistics.median(times)}


def fmt_time(s):
    if s is None:
        return "—"
    if s >= 1.0:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    if s >= 1e-6:
        return f"{s * 1e6:.3g} µs"
    return f"{s * 1e9:.3g} ns"


def summarize(rec):
    if rec["status"] != "ok":
        return rec["status"]
    text = f"steady {fmt_time(rec.get('steady_s'))}"
    if "first_s" in rec:
        text = f"first {fmt_time(rec['first_s'])}, {text}"
    if "gbs" in rec:
        text += f", {rec['gbs']:.1f} GB/s"
    return text


def worker_main(job, mode, tools, skip, state_path, t0):
    """Entry point of `python -m benchmarks --worker JOB`: JOB is a workload name or 'sweep:NAME'."""
    from .workloads import BY_NAME, SWEEP_BY_NAME

    warnings.simplefilter("ignore")   # Numba's performance warnings (no parallel transform possible, ...)
    os.environ.setdefault("NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING", "1")

    def progress(msg):
        el = time.time() - t0
        print(f"[{int(el) // 60:02d}:{int(el) % 60:02d}]   {msg}", file=sys.stderr, flush=True)

    if job.startswith("sweep:"):
        run_sweep(SWEEP_BY_NAME[job[6:]], mode, tools, skip, state_path, progress)
    else:
        run_workload(BY_NAME[job], mode, tools, skip, state_path, progress)
