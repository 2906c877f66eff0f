"""lorikeet: a JIT compiler for the numerical subset of Python.

    import lorikeet as lk

    @lk.jit
    def norm(a, b):
        return np.sqrt(a * a + b * b).sum()

The first call with a new combination of argument types compiles the function (and the functions it calls)
through lorikeet's typed data-parallel IR to native code; later calls with those types go straight to it.
"""
import builtins
import collections
import functools
import inspect
import os
import sys
import types
import weakref

from . import _lorikeet
from ._source import function_ast, resolve_env
from .errors import BackendUnavailable, CompileError, DeviceMemoryError, InternalError

__all__ = ["jit", "CompileError", "BackendUnavailable", "InternalError", "DeviceMemoryError", "runtime", "set_backend", "get_backend",
           "explain",
           "DeviceArray", "to_device", "gpu_available",
           "set_parallel_threshold", "get_parallel_threshold",
           "set_num_threads", "get_num_threads", "map", "reduce", "scan", "imap", "ireduce", "outer_map", "prange"]

__version__ = "0.1.0"

_default_backend = os.environ.get("LORIKEET_BACKEND", "cpu")

DeviceArray = _lorikeet.DeviceArray
DeviceArray.__module__ = "lorikeet"


def to_device(x):
    """x (a NumPy array, or anything np.asarray takes) copied to the GPU as a new C-contiguous lk.DeviceArray:
    one host-to-device copy. A DeviceArray is returned as it is. BackendUnavailable says why when there is no
    usable GPU; MemoryError when the device cannot hold it."""
    return _lorikeet.to_device(x)


def gpu_available():
    """(True, None) when gpu calls can run in this process, else (False, the reason: no CUDA driver, no device,
    a driver too old for the NVRTC found, no NVRTC, CUDA initialised before fork(), the device lost). May
    initialise the CUDA driver."""
    return _lorikeet.gpu_available()


BACKENDS = ("cpu", "openmp", "gpu", "auto")


def _check_backend(name, where):
    if name not in BACKENDS:
        raise ValueError(f"{where}: unknown backend {name!r} (one of {', '.join(BACKENDS)})")
    return name


def set_backend(name):
    """Sets the backend that @jit uses when none is named: "cpu", "openmp", "gpu", or "auto" (each call runs on
    the backend predicted fastest for its arguments: see explain())."""
    global _default_backend
    _default_backend = _check_backend(name, "set_backend")


def set_num_threads(n):
    """The number of threads the openmp backend runs loops on (default: $LORIKEET_NUM_THREADS, else
    $OMP_NUM_THREADS, else every core)."""
    _lorikeet.set_num_threads(int(n))


def get_num_threads():
    return _lorikeet.get_num_threads()


def set_parallel_threshold(work):
    """The openmp backend runs a loop on the team only when its work (elements times a rough cost of the
    body) reaches this (default 300000, about the break-even measured on a 2-core x86 machine)."""
    _lorikeet.set_parallel_threshold(int(work))


def get_parallel_threshold():
    """The work from which the openmp backend runs a loop on the team ($LORIKEET_PARALLEL_THRESHOLD, else
    300000, unless set_parallel_threshold changed it)."""
    return _lorikeet.get_parallel_threshold()


def get_backend():
    return _default_backend


def explain(f, *args):
    """What backend="auto" predicts for calling f (a function jitted with backend="auto") with these arguments,
    and what it would choose now: {"choice", "steady_choice" (once its gpu code exists), "cpu", "openmp", "gpu"
    (predicted seconds; gpu None when host data cannot go there), "work", "parallel_work", "regions",
    "bytes_in", "bytes_out", "estimated" (some extent was guessed), "calibrated" (the costs were measured by
    `python -m lorikeet calibrate`), "device_args", "gpu_savings" (seconds the gpu would have saved so far,
    against the cost of compiling for it), "gpu_cached" (the disk cache holds the gpu code of this signature, so
    getting it costs a load, not a compile; None before that was asked)}.
    Compiles nothing for any backend and runs nothing."""
    if getattr(f, "backend", None) != "auto":
        raise ValueError(f"explain: {f!r} is not a function jitted with backend=\"auto\"")
    from . import _auto

    _auto.ensure_costs()
    return f._auto_estimate(tuple(args))


class Dispatcher(_lorikeet.Dispatcher):
    """A compiled function: call it like the Python function it wraps."""

    def _get_untyped(self):
        fdef, filename, line_offset, source = function_ast(self.py_func, with_source=True)
        env = resolve_env(self.py_func, fdef)
        # what the disk cache's key says of this function (lorikeet/_key.py): the same text and resolution, and
        # the span of file lines its code's positions lie in (which the cache rebases when the code moved)
        first = fdef.lineno + line_offset - 1
        span = (first, (getattr(fdef, "end_lineno", None) or fdef.lineno) + line_offset - 1)
        self.__dict__["_key_material"] = (filename, line_offset, source, env, span)
        return _lorikeet.lower(fdef, env, filename, line_offset)

    def _call_slow(self, *args, **kwargs):
        """Keyword arguments, default values, lists (converted to arrays), and unsupported argument types
        (a TypeError naming the parameter)."""
        backend = kwargs.pop("_backend", None)
        if backend is not None and backend != self.backend:
            return self._sibling(_check_backend(backend, "_backend"))(*args, **kwargs)
        try:
            bound = inspect.signature(self.py_func).bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.py_func.__name__}(): {e}") from None
        bound.apply_defaults()
        args = list(bound.args)
        names = list(bound.signature.parameters)
        code = self.py_func.__code__
        nfixed = code.co_argcount if code.co_flags & inspect.CO_VARARGS else len(args)
        names = names[:nfixed] + [names[nfixed] if nfixed < len(names) else "args"] * (len(args) - nfixed)
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
        args, copies = _aligned_args(args, names)
        args = tuple(_function_value(a) for a in args)
        packed = args[:nfixed] + (args[nfixed:],) if code.co_flags & inspect.CO_VARARGS else args
        self._compile(packed)  # names the parameter whose type is unsupported, or compiles
        if not copies:
            return self(*args)
        try:
            return self(*args)
        finally:  # what the function wrote reaches the caller's arrays, raised or returned
            for orig, copy in copies:
                if orig.flags.writeable:
                    import numpy as np

                    np.copyto(orig, copy)

    def _compile(self, args, *rest):
        """Compiles for these arguments (C: dispatcher_compile); under "auto", the cpu's code stands for the
        specialisation (typed IR, hashes, the parameter a TypeError names)."""
        args = tuple(_function_value(a) for a in args)
        if self.backend == "auto":
            return self._sibling("cpu")._compile(args, *rest)
        return super()._compile(args, *rest)

    def _sibling(self, backend):
        """This function's dispatcher for another backend (a per-call backend, auto's choice, warm-up for it),
        made once."""
        if backend == self.backend:
            return self
        siblings = self.__dict__.setdefault("_siblings", {})
        d = siblings.get(backend)
        if d is None:
            d = siblings[backend] = Dispatcher(self.py_func, backend, bool(self.boundscheck), bool(self.fastmath),
                                               bool(self.cache))
            d.__dict__["_declared"] = self.declared_signatures
        return d

    @property
    def declared_signatures(self):
        """The signatures given to @jit (lorikeet._signatures.Signature), compiled by warmup()."""
        return self.__dict__.get("_declared", [])

    def warmup(self, *args, backend=None):
        """Compiles without running: for every declared signature (no arguments), or for the types of the
        example arguments given (arrays, scalars, tuples: their values are not used). backend: compile for
        another backend than this function's. Calls with matching arguments then compile nothing; with the disk
        cache on, the code is also stored for later processes. Raises what compiling raises."""
        if (backend or self.backend) == "auto":  # every backend auto may choose here
            for b in _auto_backends():
                self._sibling(b).warmup(*args)
            return
        d = self._sibling(backend) if backend else self
        if args:
            d._compile(tuple(args), False, True)
            return
        for sig in self.declared_signatures:
            d._warm_signature(sig)

    def _warm_declared(self):
        """The dispatcher's first miss: the declared signatures are compiled (or loaded from the disk cache)."""
        for sig in self.declared_signatures:
            self._warm_signature(sig)

    def _warm_signature(self, sig):
        """Compiles one declared signature; CompileError and the like name it, and a TypeError a declared return
        type that is not what the code returns."""
        try:
            typed_ir = self._compile(sig.examples(), False, True)[0]
            from ._signatures import check_return

            check_return(sig, typed_ir, self.py_func.__qualname__)
        except Exception as e:
            try:
                e.add_note(f"while compiling {self.py_func.__qualname__} for the declared signature {sig.text!r}")
            except AttributeError:  # Python < 3.11
                pass
            raise

    def inspect_types(self, *args):
        """The typed IR, after the IR passes, of the specialisation for these arguments (compiling it if needed)."""
        return self._compile(tuple(args))[0]

    def inspect_parallel(self, *args):
        """Which loops of the specialisation for these arguments may run in parallel: a list of
        {"line", "kind", "why"} in source order, kind "prange" (lk.prange), "parallel" (a range loop whose
        iterations lorikeet proved independent: the openmp and gpu backends run it like prange) or "sequential"
        with why not. Loops of inlined callees are listed at their own lines."""
        report = self._compile(tuple(args))[4]
        out, seen = [], set()
        for row in report.splitlines():  # a loop versioned on its bounds (two copies) is listed once
            if row not in seen:
                seen.add(row)
                line, kind, why = row.split("\t", 2)
                out.append({"line": int(line), "kind": kind, "why": why or None})
        return out

    def inspect_llvm(self, *args):
        """The optimised LLVM IR of the specialisation for these arguments."""
        return self._compile(tuple(args), True)[1]

    def inspect_cuda(self, *args):
        """The CUDA C that the gpu backend makes of the specialisation for these arguments: a kernel for every
        parallel region, the device functions they call. Needs no GPU (nothing is compiled or run)."""
        return _lorikeet.cuda_source(self, tuple(args))

    def inspect_split(self, *args):
        """Whether a call with these arguments may run in pieces along the first axis when its arrays do not fit
        in device memory: {"splittable", "args" (per parameter: "rows", "whole" or "scalar"), "results" (per
        returned value: "concatenate", "combine <op>" or "same"), and when it may not, "reason", "file" and
        "line" (what prevents it)}. Compiles the specialisation if needed; runs nothing."""
        d = self._sibling("cpu") if self.backend == "auto" else self
        return d._split_plan(tuple(args))

    def ir_hash(self, *args):
        """The canonical hash (SHA-256, hex) of the typed IR after the IR passes of the specialisation for these
        arguments: the content address of the compilation. Unlike inspect_types' text it covers every source
        position, flag and variable of the IR; the same function and argument types give the same hash in any
        process."""
        return self._compile(tuple(args))[3]

    def cache_info(self):
        """{'hits', 'misses', 'compiles'}: specialisations of this function loaded from the disk cache, looked up
        there but not found (then compiled and saved), and compiled by the backend in this process (under
        "auto": summed over the backends it chose)."""
        if self.backend == "auto":
            parts = [d.cache_info() for d in self.__dict__.get("_siblings", {}).values()]
            return {k: sum(p[k] for p in parts) for k in ("hits", "misses", "compiles")}
        return {"hits": self._cache_hits, "misses": self._cache_misses, "compiles": self._compiles}

    def __repr__(self):
        return f"<lorikeet.jit {self.py_func.__qualname__} backend={self.backend}>"

    def __reduce__(self):
        """Pickled by reference to the function's module and qualified name, with the jit options (as pickle
        does for functions): the other process imports the module and takes the jitted function found there,
        whose compiled code it loads from the shared disk cache. A function that cannot be found that way (a
        lambda, a nested function or closure, one replaced in its module) raises pickle.PicklingError saying
        which."""
        return _unpickle_dispatcher, (*_pickle_reference(self), _jit_options(self))

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)


def jit(fn=None, *, signatures=None, eager=None, backend=None, boundscheck=True, fastmath=False, cache=True):
    """Compiles fn on first call for each argument-type signature.

    signatures: declared signatures in Numba's notation ("float64[:](float64[:], int64)", or a list of them;
    also accepted as the first argument, @lk.jit("f8(f8[::1])")), compiled by f.warmup() and by
    `python -m lorikeet warmup MODULE`, or at decoration with eager=True (or LORIKEET_EAGER=1). A malformed
    signature raises at decoration (ValueError naming it and the position).

    backend: "cpu" (default, or $LORIKEET_BACKEND / set_backend()), "openmp", "gpu", or "auto" (each call on the
    backend predicted fastest for its arguments; f.last_backend says which ran, lk.explain why); boundscheck: raise IndexError on out-of-bounds
    indexing (default True); fastmath: let LLVM reassociate floating point and assume no NaN/inf; cache: keep the
    compiled code of the cpu and openmp backends on disk for the next process (default True; LORIKEET_CACHE=0
    turns it off everywhere).
    """

    if isinstance(fn, (str, list, tuple)):  # lk.jit("f8(f8[:])"), Numba's positional signatures
        if signatures is not None:
            raise TypeError("lorikeet.jit: signatures given twice (as the first argument and signatures=)")
        fn, signatures = None, fn
    if eager is None:
        eager = os.environ.get("LORIKEET_EAGER", "0").strip().lower() not in ("", "0", "off", "false", "no")

    chosen = _check_backend(backend or _default_backend, "jit")
    if chosen == "auto":
        from . import _auto

        _auto.ensure_costs()

    def wrap(f):
        d = Dispatcher(f, chosen, boundscheck, fastmath, cache)
        functools.update_wrapper(d, f)
        d.__dict__.pop("_lorikeet_callee", None)  # f's own, as a callee (_callee_dispatcher): not d's
        if signatures is not None:
            from ._signatures import parse_all

            d.__dict__["_declared"] = parse_all(signatures, f"@jit of {getattr(f, '__qualname__', f)}")
            if eager:
                d.warmup()
        return d

    return wrap(fn) if fn is not None else wrap


def _auto_backends():
    """The backends auto may choose in this process: cpu, openmp, and gpu when a gpu call can run here."""
    return ("cpu", "openmp", "gpu") if gpu_available()[0] else ("cpu", "openmp")


# ---- pickling: jitted functions travel to worker processes by reference (multiprocessing, Dask) ----

def _jit_options(d):
    return (d.backend, bool(d.boundscheck), bool(d.fastmath), bool(d.cache))


def _find_by_reference(module, qualname):
    import importlib

    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _pickle_reference(d):
    """(module, qualname) under which d's function is found again in another process, or PicklingError."""
    import pickle

    f = d.py_func
    module = getattr(f, "__module__", None)
    qualname = getattr(f, "__qualname__", None) or getattr(f, "__name__", repr(f))
    if "<lambda>" in qualname:
        why = "it is a lambda"
    elif "<locals>" in qualname:
        why = "it is defined inside another function (a nested function or closure)"
    elif module is None:
        why = "its function has no __module__"
    else:
        try:
            found = _find_by_reference(module, qualname)
        except (ImportError, AttributeError) as e:
            why = f"{module}.{qualname} cannot be imported ({type(e).__name__}: {e})"
        else:
            if found is d or found is f or (isinstance(found, Dispatcher) and found.py_func is f):
                return module, qualname
            why = f"{module}.{qualname} is another object now"
    raise pickle.PicklingError(
        f"cannot pickle the jitted function {qualname!r}: {why}. A jitted function travels to another process by "
        "reference to its module and name, so define it with def at the top level of an importable module")


_unpickled = weakref.WeakKeyDictionary()  # py_func -> {options: Dispatcher}, for functions jitted with other options


def _unpickle_dispatcher(module, qualname, options):
    """The jitted function module.qualname in this process, with these jit options."""
    import pickle

    try:
        found = _find_by_reference(module, qualname)
    except (ImportError, AttributeError) as e:
        raise pickle.UnpicklingError(
            f"lorikeet: the jitted function {module}.{qualname} cannot be found in this process "
            f"({type(e).__name__}: {e}). A worker imports the function's module again: a function defined in "
            "__main__ of an interactive session, of `python -c` or under `if __name__ == '__main__':` does not "
            "exist there; put it in an importable module") from e
    if isinstance(found, Dispatcher) and _jit_options(found) == options:
        return found
    f = found.py_func if isinstance(found, Dispatcher) else found
    by_options = _unpickled.setdefault(f, {})
    d = by_options.get(options)
    if d is None:
        backend, boundscheck, fastmath, cache = options
        d = by_options[options] = jit(f, backend=backend, boundscheck=boundscheck, fastmath=fastmath, cache=cache)
    return d


def _callee_dispatcher(obj):
    """The dispatcher of a function called from compiled code: obj itself, or for a plain function one made once
    and kept in the function's __dict__, so that it lives as long as the function. It compiles a twin of the
    function (the same code, globals, defaults and closure cells, so the same source and values), not the
    function itself: a dispatcher of the function in its own __dict__ would be a cycle that only the collector
    frees, and lambdas passed to lk.map from Python would pile up until it ran. (A WeakKeyDictionary from functions
    to their dispatchers never let a function go at all.) functools.wraps copies a __dict__ to the wrapper: a
    dispatcher found there is used only if it is one of this function."""
    if isinstance(obj, Dispatcher):
        return obj
    kept = getattr(obj, "__dict__", {}).get("_lorikeet_callee")
    if kept is not None and _twins(kept.py_func, obj):
        return kept
    d = Dispatcher(_twin(obj) if isinstance(obj, types.FunctionType) else obj)
    try:
        obj.__dict__["_lorikeet_callee"] = d
    except (AttributeError, TypeError):  # no __dict__ to keep it in: made again at the next compilation
        pass
    return d


def _twin(fn):
    twin = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    twin.__kwdefaults__ = fn.__kwdefaults__
    twin.__qualname__ = fn.__qualname__
    twin.__module__ = fn.__module__
    return twin


def _twins(a, b):
    return a is b or (a.__code__ is b.__code__ and a.__globals__ is b.__globals__ and a.__closure__ is b.__closure__
                      and a.__defaults__ is b.__defaults__ and a.__kwdefaults__ is b.__kwdefaults__)


def _const_arrays(d, args=()):
    """(names, arrays): the frozen arrays (resolve_env's ('array', a)) that dispatcher d's function and every
    function it may call read from outside themselves (globals, closure cells, default values), each once, in a
    fixed order (depth first through the callees, names sorted), then those of the functions among args. A
    compilation passes them to its code as hidden arguments after the call's own (typespec.h's TsOptions):
    compiled code holds no address of this process."""
    found = ([], [], set(), set())  # names, arrays, ids of arrays, ids of dispatchers walked
    _walk_const_arrays(d, d, found)
    for a in args:  # functions passed as arguments (dispatchers: _call_slow makes them of plain functions)
        if isinstance(a, Dispatcher):
            _walk_const_arrays(a, d, found)
    return tuple(found[0]), tuple(found[1])


def _material(d):
    """(file, first line, source, env, span) of a dispatcher, as its untyped IR was made from them (made now if
    not); pyshim/cache_key.c reads the same record for the cache key."""
    m = d.__dict__.get("_key_material")
    if m is None:
        d._untyped()
        m = d.__dict__["_key_material"]
    return m


def _walk_const_arrays(disp, root, found):
    """_const_arrays' walk (a module function: a recursive closure would be a cycle holding the dispatchers)."""
    names, arrays, seen, visited = found
    if id(disp) in visited:
        return
    visited.add(id(disp))
    try:
        env = _material(disp)[3]
    except Exception:  # not compilable: typing reports it if the function is called at all
        return
    fn = disp.py_func
    for name in sorted(env):
        r = env[name]
        if r[0] == "array" and id(r[1]) not in seen:
            seen.add(id(r[1]))
            if name.startswith("<default "):  # the parameter's name
                code, k = fn.__code__, int(name[9:-1])
                name = code.co_varnames[code.co_argcount - len(fn.__defaults__) + k]
            names.append(name if disp is root else f"{fn.__name__}.{name}")
            arrays.append(r[1])
        elif r[0] == "func":
            _walk_const_arrays(_callee_dispatcher(r[1]), root, found)


# Plain functions passed to a jitted function from Python, as the dispatchers that stand for them: one per
# function key (_function_key: its code and the values it reads), so that a new lambda with the same code and
# values each call compiles once; the 64 most recently used are kept.
_function_values = collections.OrderedDict()


def _aligned_args(args, names):
    """(args, [(array, its copy)]): each array argument that is not aligned (a view at an odd byte offset, as
    Dask hands over chunks it received from another process) replaced by an aligned copy, which compiled code can
    load from; the caller copies the copies back after the call, so that what the function writes reaches the
    arrays. An argument given twice shares one copy; one that shares memory with another argument cannot be
    copied without parting them: a TypeError names both."""
    import numpy as np

    if not any(isinstance(a, np.ndarray) and a.ndim and not a.flags.aligned for a in args):
        return args, []
    args, copies = list(args), []
    for i, a in enumerate(args):
        if not (isinstance(a, np.ndarray) and a.ndim and not a.flags.aligned):
            continue
        done = next((c for o, c in copies if o is a), None)
        if done is None:
            for j, b in enumerate(args):
                if j != i and b is not a and isinstance(b, np.ndarray) and np.shares_memory(a, b):
                    raise TypeError(f"argument '{names[i]}': the array is not aligned and shares memory with argument "
                                    f"'{names[j]}', so it cannot be copied to an aligned one for the call; pass "
                                    f"np.require(x, requirements='A') and copy the result back")
            done = np.array(a, order="K", copy=True)
            copies.append((a, done))
        args[i] = done
    return tuple(args), copies


def _function_value(a):
    """A function argument as compiled code takes it: a dispatcher (specialised on by identity), else a."""
    if not isinstance(a, types.FunctionType):
        return a
    key = _function_key(a)
    d = _function_values.get(key)
    if d is None:
        d = _function_values[key] = Dispatcher(_twin(a))
        while len(_function_values) > _OP_WRAPPERS_KEPT:
            _function_values.popitem(last=False)
    else:
        _function_values.move_to_end(key)
    return d


def _callee_untyped(obj):
    """The untyped IR of a function called from compiled code (a dispatcher, or a plain function compiled too)."""
    return _callee_dispatcher(obj)._untyped()


# ---- the data-parallel operators, from plain Python ----
# Inside compiled code, lk.map(...) and friends are IR nodes. Called from Python they compile a small wrapper
# (once per function's code and values, arity and constant options: _function_key) whose body is that same call,
# so both paths share one implementation. The wrapper's source is registered with linecache so the frontend can
# read it.

_op_wrappers = collections.OrderedDict()


def _operator_wrapper(op, fn_names, nargs, options):
    import linecache

    params = [f"a{i}" for i in range(nargs)]
    opts = "".join(f", {k}={v!r}" for k, v in options)
    src = f"def __lk_{op}({', '.join(params)}):\n    return __lk.{op}({', '.join(list(fn_names) + params)}{opts})\n"
    # named by its text, not by how many wrappers came first: positions and the file are part of the
    # compilation's key, so the same call compiles to the same code in every process
    import hashlib

    filename = f"<lorikeet.{op} wrapper {hashlib.sha256(src.encode()).hexdigest()[:16]}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    return filename, src


def _checked_operator_args(op, fns, options):
    """The functions must be callables and axis an integer (or None): anything else is a TypeError here, before it
    becomes part of a wrapper's key or source."""
    import operator

    for f in fns:
        if not callable(f):
            raise TypeError(f"lk.{op}(): the function argument must be callable, not {type(f).__name__}")
    checked = []
    for k, v in options:
        if v is not None:
            try:
                if isinstance(v, bool):
                    raise TypeError
                v = operator.index(v)
            except TypeError:
                raise TypeError(f"lk.{op}(): {k} must be an integer or None, not {type(v).__name__}") from None
        checked.append((k, v))
    return tuple(checked)


class _Same:
    """A part of an operator wrapper's key that is equal only to the same object (and keeps it alive while the key
    lives, so that its id is not reused)."""
    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __eq__(self, other):
        return isinstance(other, _Same) and other.obj is self.obj

    def __hash__(self):
        return id(self.obj)


_EMPTY_CELL = object()


def _value_key(v):
    """v as a part of a key: numbers, strings, None and tuples of them by type and value (what lorikeet compiles
    into code as a constant; floats by their bits, so that -0.0 is not 0.0), NumPy arrays by dtype, shape, layout
    and a hash of their values (a frozen constant array), anything else by identity."""
    t = type(v)
    if t is float:
        return (t, v.hex())
    if t is complex:
        return (t, v.real.hex(), v.imag.hex())
    if v is None or t in (bool, int, str):
        return (t, v)
    if t is tuple:
        return (t, tuple(_value_key(x) for x in v))
    np = sys.modules.get("numpy")
    if np is not None and isinstance(v, np.generic) and not isinstance(v, np.void):
        return (t, _value_key(v.item()))
    if np is not None and t is np.ndarray:  # frozen into the code (a constant array): by its values
        from ._source import _array_value

        return (t, _array_value(v))
    return _Same(v)


def _code_names(code, out):
    """The names code and the functions and comprehensions nested in it read as globals (co_names also holds
    attribute names: a superset)."""
    out.update(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _code_names(c, out)
    return out


def _function_key(fn):
    """What the code compiled for a plain function passed to an operator depends on: its code object, defaults,
    the values in its closure and those of the globals (or builtins) it may read. Two lambdas made by one
    expression with equal values share compiled code; a new value is a new key. Anything else (a dispatcher, a
    ufunc, a builtin) is keyed by identity."""
    code = getattr(fn, "__code__", None)
    if not isinstance(fn, types.FunctionType) or code is None:
        return _Same(fn)
    cells = tuple(_value_key(c.cell_contents) if _cell_full(c) else _EMPTY_CELL for c in fn.__closure__ or ())
    globs = fn.__globals__
    bi = globs.get("__builtins__", builtins)
    bi = vars(bi) if isinstance(bi, types.ModuleType) else bi
    names = []
    for name in sorted(_code_names(code, set())):
        if name in globs:
            names.append((name, _value_key(globs[name])))
        elif name in bi:
            names.append((name, _Same(bi[name])))
    return (_Same(code), _value_key(fn.__defaults__), _value_key(tuple(sorted((fn.__kwdefaults__ or {}).items()))),
            cells, tuple(names))


def _cell_full(cell):
    try:
        cell.cell_contents
    except ValueError:  # an empty cell: the enclosing variable is not assigned yet
        return False
    return True


# Operator wrappers by (op, key of each function, argument count, options), the most recently used last; the
# least recently used beyond this many are dropped, and with them their compiled code.
_OP_WRAPPERS_KEPT = 64


def _run_operator(op, fns, args, options=()):
    options = _checked_operator_args(op, fns, options)
    key = (op, tuple(_function_key(f) for f in fns), len(args), tuple(options))
    d = _op_wrappers.get(key)
    if d is None:
        names = tuple(f"__f{i}" for i in range(len(fns)))
        filename, src = _operator_wrapper(op, names, len(args), tuple(options))
        ns = {"__lk": sys.modules[__name__]}
        ns.update(zip(names, fns))
        exec(compile(src, filename, "exec"), ns)
        for f in fns:  # a new key may be new values of arrays f reads: its callee dispatcher freezes them anew
            if isinstance(f, types.FunctionType):
                f.__dict__.pop("_lorikeet_callee", None)
        # taken out of its namespace, which its __globals__ is: no cycle, so that a dropped wrapper (and the
        # functions it holds, and their compiled code) is freed at once, without waiting for the collector
        d = _op_wrappers[key] = Dispatcher(ns.pop(f"__lk_{op}"))
        while len(_op_wrappers) > _OP_WRAPPERS_KEPT:
            _op_wrappers.popitem(last=False)
    else:
        _op_wrappers.move_to_end(key)
    return d(*args)


def map(fn, *arrays, axis=None):
    """fn applied elementwise to the broadcast arrays (or, with axis, to each slice along that axis)."""
    return _run_operator("map", (fn,), arrays, (("axis", axis),) if axis is not None else ())


def reduce(fn, x, init=None, axis=None):
    """x combined with the binary fn (assumed associative), from init if given; axis=None reduces everything."""
    opts = (("axis", axis),) if axis is not None else ()
    if init is None:
        return _run_operator("reduce", (fn,), (x,), opts)
    return _run_operator("reduce", (fn,), (x, init), opts)


def scan(fn, x, init=None, axis=None):
    """The inclusive running combination of x with fn (np.cumsum is scan of add), starting from init if given;
    axis=None flattens."""
    opts = (("axis", axis),) if axis is not None else ()
    if init is None:
        return _run_operator("scan", (fn,), (x,), opts)
    return _run_operator("scan", (fn,), (x, init), opts)


def imap(fn, shape):
    """The array of fn(i) (or fn(i, j, ...)) over the index space shape."""
    return _run_operator("imap", (fn,), (shape,))


def ireduce(fn, combine, shape, init):
    """combine over fn(i, ...) for every index of shape, starting from init."""
    return _run_operator("ireduce", (fn, combine), (shape, init))


def outer_map(fn, x, y):
    """result[i, j] = fn(x[i], y[j]) over the first axis of x and y."""
    return _run_operator("outer_map", (fn,), (x, y))


def prange(*args):
    """range() whose iterations are independent (run in parallel by the openmp backend; sequential elsewhere)."""
    return range(*args)


class runtime:
    """The runtime's memory: runtime.stats() -> {'allocations', 'frees', 'live_bytes', 'cached_bytes',
    'cache_limit_bytes'} for host
    arrays, and the gpu's counters: 'h2d_copies', 'h2d_bytes', 'd2h_copies', 'd2h_bytes', 'd2d_copies' (copies
    between host and device, and on the device), 'device_allocations', 'device_frees', 'device_live_bytes',
    'launches', 'compiles' (NVRTC runs), 'disk_images' (kernel images read from the on-disk cache instead of
    running NVRTC), 'modules' (loaded on the device), 'cublas_calls' (matrix products that cuBLAS computed);
    reading them never initialises CUDA.
    runtime.blas() says which BLAS float matrix products call (see its doc).
    runtime.release_cached_memory() frees the blocks of freed arrays kept for reuse (at most
    LORIKEET_BUFFER_CACHE_MB; by default a sixteenth of the machine's memory, between 256 MiB and 2 GiB)."""

    @staticmethod
    def stats():
        s = _lorikeet.runtime_stats()
        s.update(_lorikeet.gpu_stats())
        return s

    @staticmethod
    def blas(enabled=None):
        """The BLAS that float32/float64 matrix products call (the one NumPy loaded): {'library', 'symbol',
        'ilp64', 'threads_control', 'enabled', 'calls', 'why_not'}; library is None where none was found.
        blas(False) sends the products to lorikeet's own GEMM (as LORIKEET_BLAS=0 does), blas(True) back."""
        if enabled is not None:
            _lorikeet.blas_set_enabled(bool(enabled))
        return _lorikeet.blas_info()

    @staticmethod
    def release_cached_memory():
        _lorikeet.release_cached_memory()
