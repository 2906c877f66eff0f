"""lorikeet: a JIT compiler for the numerical subset of Python.

    import lorikeet as lk

    @lk.jit
    def norm(a, b):
        return np.sqrt(a * a + b * b).sum()

The first call with a new combination of argument types compiles the function (and the functions it calls)
through lorikeet's typed data-parallel IR to native code; later calls with those types go straight to it.
"""
import functools
import inspect
import os
import weakref

from . import _lorikeet
from ._source import function_ast, resolve_env
from .errors import BackendUnavailable, CompileError, InternalError

__all__ = ["jit", "CompileError", "BackendUnavailable", "InternalError", "runtime", "set_backend", "get_backend"]

_default_backend = os.environ.get("LORIKEET_BACKEND", "cpu")


def set_backend(name):
    """Sets the backend that @jit uses when none is named ("cpu"; "openmp" and "gpu" are not built yet)."""
    global _default_backend
    _default_backend = name


def get_backend():
    return _default_backend


class Dispatcher(_lorikeet.Dispatcher):
    """A compiled function: call it like the Python function it wraps."""

    def _get_untyped(self):
        fdef, filename, line_offset = function_ast(self.py_func)
        env = resolve_env(self.py_func, fdef)
        return _lorikeet.lower(fdef, env, filename, line_offset)

    def _call_slow(self, *args, **kwargs):
        """Keyword arguments, default values, lists (converted to arrays), and unsupported argument types
        (a TypeError naming the parameter)."""
        try:
            bound = inspect.signature(self.py_func).bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.py_func.__name__}(): {e}") from None
        bound.apply_defaults()
        args = list(bound.args)
        names = list(bound.signature.parameters)
        for i, a in enumerate(args):
            if isinstance(a, list):
                import numpy as np

                try:
                    arr = np.asarray(a)
                except Exception:
                    arr = None
                if arr is None or arr.dtype == object or arr.ndim == 0 or arr.dtype.kind not in "biuf":
                    raise TypeError(f"argument '{names[i]}': only lists of numbers (converted to arrays) are supported")
                args[i] = arr
        args = tuple(args)
        self._compile(args)  # names the parameter whose type is unsupported, or compiles
        return self(*args)

    def inspect_types(self, *args):
        """The typed IR, after the IR passes, of the specialisation for these arguments (compiling it if needed)."""
        return self._compile(tuple(args))[0]

    def inspect_llvm(self, *args):
        """The optimised LLVM IR of the specialisation for these arguments."""
        return self._compile(tuple(args), True)[1]

    def __repr__(self):
        return f"<lorikeet.jit {self.py_func.__qualname__} backend={self.backend}>"

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)


def jit(fn=None, *, backend=None, boundscheck=True, fastmath=False):
    """Compiles fn on first call for each argument-type signature.

    backend: "cpu" (default, or $LORIKEET_BACKEND / set_backend()); boundscheck: raise IndexError on out-of-bounds
    indexing (default True); fastmath: let LLVM reassociate floating point and assume no NaN/inf.
    """

    def wrap(f):
        d = Dispatcher(f, backend or _default_backend, boundscheck, fastmath)
        functools.update_wrapper(d, f)
        return d

    return wrap(fn) if fn is not None else wrap


_plain_functions = weakref.WeakKeyDictionary()


def _callee_untyped(obj):
    """The untyped IR of a function called from compiled code (a dispatcher, or a plain function compiled too)."""
    if not isinstance(obj, Dispatcher):
        d = _plain_functions.get(obj)
        if d is None:
            d = _plain_functions[obj] = Dispatcher(obj)
        obj = d
    return obj._untyped()


class runtime:
    """The runtime's counters: runtime.stats() -> {'allocations', 'frees', 'live_bytes'}."""

    @staticmethod
    def stats():
        return _lorikeet.runtime_stats()
