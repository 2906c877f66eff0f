"""_key.py: the key of a compilation in the on-disk code cache, and the cache's side of the compile path.

The key is SHA-256 of a *preimage*, canonical line-oriented UTF-8 text that holds exactly what the compiled code
depends on and nothing that changes from run to run:

    lorikeet-cache 1
    lorikeet 0.1.0 / build <the extension's build id> / python cpython-311 / numpy 2 / pipeline 9
    backend, codegen, triple, cpu, features, llvm, vecmath, fastmath, ... (the backend's key_extras, one a line)
    options boundscheck=1 fastmath=0
    signature array(float64, 1d, C), int
    function #0 module.qualname            the function, then every function it calls, depth first:
    file /path/to/module.py 12               its file and first line (error messages name them)
    source 57                                the exact text the frontend parses, its length first
    defaults (int 1,)                        __defaults__, __kwdefaults__
    env K const int 3                        one line per free name it reads, sorted, as resolve_env saw it:
    env g func #1 other.g                    a callee's own block follows (a function met before: "rec #n")
    env np module numpy / env sqrt named numpy.sqrt / env x unsupported <description>
    end #0

Floats are written in hex (every bit counts), values never by repr of an object, never id() or hash().
What a function's free names meant is taken when its untyped IR is made (the same resolution the frontend
lowered), so the key describes the code that was compiled, even if a global changed later in the process.
Run-time settings (thread count, the parallel threshold) are not compiled into code and are not in the key.

Positions: lorikeet's error messages carry the file and line, and compiled code holds them, so a function's
file and first line are in the key: an edit above a function, or a package moved to another folder, recompiles
it (relative positions would avoid that; not built).

fetch() and done() are called by the compile path (pyshim/code_cache.c); they never raise into it.
"""
import os
import sys
import time

try:  # CPython's own SHA-256: hashlib would load OpenSSL, several ms at the first hit of a process
    from _sha256 import sha256
except ImportError:
    try:
        from _sha2 import sha256
    except ImportError:
        from hashlib import sha256

FORMAT = 1

_toolchains = {}


def toolchain(backend, fastmath):
    """{name: value} of everything besides the program that the code of backend depends on, in key order:
    lorikeet's version and build id, Python's cache tag, NumPy's major version, the IR pipeline's version, and
    the backend's key_extras (target triple, CPU name and features, LLVM version, math library, fastmath...).
    Memoised per process (none of them changes while it runs)."""
    k = (backend, bool(fastmath))
    t = _toolchains.get(k)
    if t is None:
        import numpy

        from . import __version__, _lorikeet

        t = {
            "lorikeet": __version__,
            "build": _lorikeet.build_id() or "none",
            "python": sys.implementation.cache_tag,
            "numpy": numpy.__version__.split(".")[0],
            "pipeline": str(_lorikeet.pipeline_version),
        }
        for item in _lorikeet.key_extras(backend, bool(fastmath)).split(";"):
            name, _, value = item.partition("=")
            t[name] = value
        _toolchains[k] = t
    return t


def _value(v):
    if v is None:
        return "None"
    if isinstance(v, bool):
        return f"bool {v}"
    if isinstance(v, int):
        return f"int {v}"
    if isinstance(v, float):
        return f"float {v.hex()}"
    if isinstance(v, tuple):
        return "tuple(" + ", ".join(_value(x) for x in v) + ")"
    from ._source import _describe

    return f"other {_describe(v)}"


def _default(v):
    from ._source import _NOT_CONST, _const

    c = _const(v)
    return _value(c) if c is not _NOT_CONST else _value(v)


def _material(d):
    """(file, first line, source, env) of a dispatcher, as its untyped IR was made from them (made now if not)."""
    m = d.__dict__.get("_key_material")
    if m is None:
        d._untyped()
        m = d.__dict__["_key_material"]
    return m


def _callee_dispatcher(obj):
    from . import _callee_dispatcher

    return _callee_dispatcher(obj)


def _function_lines(d, out, numbers):
    n = numbers[id(d)] = len(numbers)  # id() only numbers this preimage's functions; it is never written
    fn = d.py_func
    name = f"{getattr(fn, '__module__', None)}.{getattr(fn, '__qualname__', fn.__name__)}"
    out.append(f"function #{n} {name}")
    try:
        filename, first, source, env = _material(d)
    except Exception as e:  # not compilable: then no code depends on it (typing never reached it)
        out.append(f"unavailable {type(e).__name__}")
        out.append(f"end #{n}")
        return
    out.append(f"file {filename} {first}")
    out.append(f"source {len(source)}")
    out.append(source)
    out.append("defaults " + ", ".join(_default(x) for x in fn.__defaults__ or ()))
    kw = fn.__kwdefaults__ or {}
    out.append("kwdefaults " + ", ".join(f"{k}={_default(kw[k])}" for k in sorted(kw)))
    for var in sorted(env):
        r = env[var]
        kind = r[0]
        if kind == "const":
            out.append(f"env {var} const {_value(r[1])}")
        elif kind in ("named", "unsupported"):
            out.append(f"env {var} {kind} {r[1]}")
        elif kind == "module":
            out.append(f"env {var} module {r[1]}")
        elif kind == "func":
            callee = _callee_dispatcher(r[1])
            seen = numbers.get(id(callee))
            if seen is not None:
                out.append(f"env {var} func rec #{seen}")
            else:
                out.append(f"env {var} func")
                _function_lines(callee, out, numbers)
        else:
            out.append(f"env {var} {kind}")
    out.append(f"end #{n}")


def preimage(d, signature, overrides=None):
    """The preimage of the key of dispatcher d's code for argument types `signature` (their printed types), as
    UTF-8 bytes. overrides replaces toolchain entries (tests: a different LLVM, CPU feature, build)."""
    tc = toolchain(d.backend, d.fastmath)
    if overrides:
        tc = {**tc, **overrides}
    out = [f"lorikeet-cache {FORMAT}"]
    out.extend(f"{k} {v}" for k, v in tc.items())
    out.append(f"options boundscheck={int(bool(d.boundscheck))} fastmath={int(bool(d.fastmath))}")
    out.append("signature " + ", ".join(signature))
    _function_lines(d, out, {})
    return ("\n".join(out) + "\n").encode("utf-8")


def generation(backend, fastmath=False):
    """The store's generation tag: backend, CPU, LLVM and build, so that one folder holds one toolchain's code."""
    tc = toolchain(backend, fastmath)
    tag = f"{backend}-{tc.get('cpu', '?')}-llvm{tc.get('llvm', '?')}-lk{tc['lorikeet']}+{tc['build'][:12]}"
    return "".join(c if c.isalnum() or c in "._+-" else "_" for c in tag)


# ---- the compile path's calls (pyshim/code_cache.c) ----

_log = os.environ.get("LORIKEET_CACHE_LOG", "") not in ("", "0")


def _store():
    try:
        from . import _cache
    except ImportError:  # the store is not built: no cache
        return None
    return _cache.store()


class _Ticket:
    __slots__ = ("store", "digest", "preimage", "generation", "name", "signature", "module", "t0", "reason")

    def __init__(self, store, digest, pre, gen, name, signature, module, t0):
        self.store, self.digest, self.preimage, self.generation = store, digest, pre, gen
        self.name, self.signature, self.module, self.t0 = name, signature, module, t0
        self.reason = "absent"

    def log(self, event):
        if _log:
            ms = (time.perf_counter() - self.t0) * 1e3
            print(f"lorikeet cache: {event} key={self.digest[:16]} fn={self.name} sig=({', '.join(self.signature)}) "
                  f"{ms:.2f} ms", file=sys.stderr, flush=True)


def fetch(d, signature, module):
    """(ticket, saved code or None) for the compilation of d for signature whose name is module, or None when
    there is no cache (LORIKEET_CACHE=0, no usable folder, no store)."""
    t0 = time.perf_counter()
    try:
        st = _store()
        if st is None:
            return None
        pre = preimage(d, signature)
    except Exception as e:
        if _log:
            print(f"lorikeet cache: skip({type(e).__name__}: {e}) fn={d.py_func.__qualname__}", file=sys.stderr)
        return None
    digest = sha256(pre).hexdigest()
    t = _Ticket(st, digest, pre, generation(d.backend, d.fastmath), f"{d.py_func.__module__}.{d.py_func.__qualname__}",
                list(signature), module, t0)
    records = st.load(digest, pre, t.generation)
    if records is None:
        return t, None
    try:
        import json

        meta = json.loads(records["meta"].decode("utf-8"))
        obj = records["obj"]
    except Exception:
        t.reason = "no meta"
        return t, None
    if meta.get("format") != FORMAT or meta.get("module") != module:
        # the key matched but the IR would be another: a gap in the key; recompile and replace the entry
        t.reason = f"ir differs ({meta.get('module')} vs {module})"
        return t, None
    return t, bytes(obj)


def loaded(t, error):
    """The saved code was given to the backend: loaded (error "") or refused."""
    if error:
        t.reason = f"load failed: {error[:120]}"
    else:
        t.log("hit")


def done(t, saved, compile_ms):
    """A miss was compiled (saved: the code's bytes, loaded and found) or failed (None): save the former."""
    if saved is None:
        t.log(f"miss({t.reason}) skip(no code)")
        return
    import json

    meta = {"format": FORMAT, "module": t.module, "function": t.name, "signature": t.signature,
            "compile_ms": round(compile_ms, 3), "generation": t.generation}
    ok = t.store.save(t.digest, t.preimage, t.generation, {"obj": saved, "meta": json.dumps(meta).encode()})
    t.log(f"miss({t.reason}) {'write' if ok else 'write failed'}")
