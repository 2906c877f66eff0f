"""A pytest plugin (``-p gpu_corpus_plugin``) that records the CUDA C of every specialisation a test run calls:
each call of a jitted function also asks inspect_cuda for the same arguments, and at the end of the session
the results go to the JSON file $LK_GPU_CORPUS. tests/test_gpu_codegen.py runs test files under it and compiles
what it recorded with NVRTC, so the gpu backend's emitter is checked on every function the suite runs."""
import json
import os

import lorikeet as lk

_records = {}


def _signature(args):
    out = []
    for a in args:
        shape = getattr(a, "shape", None)
        dtype = getattr(a, "dtype", None)
        strides = getattr(a, "strides", None)
        out.append(repr((type(a).__name__, str(dtype), len(shape) if shape is not None else None,
                         bool(getattr(getattr(a, "flags", None), "c_contiguous", True)), strides is None)))
    return tuple(out)


def _record(d, args):
    fn = d.py_func
    key = (fn.__module__, fn.__qualname__, fn.__code__.co_firstlineno, bool(d.boundscheck), _signature(args))
    if key in _records:
        return
    entry = {"name": f"{fn.__module__}.{fn.__qualname__}", "line": fn.__code__.co_firstlineno}
    try:
        entry["source"] = d.inspect_cuda(*args)
        entry["status"] = "ok"
    except Exception as e:  # noqa: BLE001 - recorded, judged by the test
        try:
            d.inspect_types(*args)
        except Exception:  # noqa: BLE001 - the program itself does not compile: not the gpu backend's concern
            return
        entry["status"] = "refused" if isinstance(e, lk.CompileError) else "error"
        entry["error"] = f"{type(e).__name__}: {e}"
    _records[key] = entry


_original_call = lk.Dispatcher.__call__


def _call(self, *args, **kwargs):
    if not kwargs:
        try:
            _record(self, args)
        except Exception:  # noqa: BLE001 - recording must never change what the test sees
            pass
    return _original_call(self, *args, **kwargs)


def pytest_configure(config):
    lk.Dispatcher.__call__ = _call


def pytest_unconfigure(config):
    path = os.environ.get("LK_GPU_CORPUS")
    if path:
        with open(path, "w") as f:
            json.dump(list(_records.values()), f)
