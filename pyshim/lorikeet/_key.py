"""_key.py: the key of a compilation in the on-disk code cache, and the cache's side of the compile path.

The key is SHA-256 of a *preimage*, canonical line-oriented UTF-8 text that holds exactly what the compiled code
depends on and nothing that changes from run to run:

    lorikeet-cache 1
    lorikeet 0.1.0 / build <the extension's build id> / python cpython-311 / numpy 2 / pipeline 9
    backend, codegen, triple, cpu, features, llvm, vecmath, fastmath, ... (the backend's key_extras, one a line)
    options boundscheck=1 fastmath=0
    signature array(float64, 1d, C), int
    function #0 module.qualname            the function, then every function it calls, depth first:
    source 57                                the exact text the frontend parses, its length first
    defaults (int 1,)                        __defaults__, __kwdefaults__
    env K const int 3                        one line per free name it reads, sorted, as resolve_env saw it:
    env G array <f8 (3,) C sha256 9f86...    (a frozen array: dtype, shape, layout and a hash of its values;
                                              a default value's is under the name "<default k>")
    env g func #1 other.g                    a callee's own block follows (a function met before: "rec #n")
    env np module numpy / env sqrt named numpy.sqrt / env x unsupported <description>
    env E exception mymodule:MyError         (an exception class a raise statement names)
    end #0

Floats are written in hex (every bit counts), values never by repr of an object, never id() or hash().
What a function's free names meant is taken when its untyped IR is made (the same resolution the frontend
lowered), so the key describes the code that was compiled, even if a global changed later in the process.
Run-time settings (thread count, the parallel threshold) are not compiled into code and are not in the key.

Positions: where a function sits (its file, its first line) is not in the key, so an edit above a function or a
package moved to another folder still hits. Compiled code names positions in its error records, so an entry
also keeps its frame, the file and span of lines of each function of the preimage as the compiling process saw
them; a process that loads it at other positions gets the spans that moved, which code_cache.c uses to rebase
the file and line of a run-time error (CompileErrors come from typing, which runs in the loading process). The
entry's code is checked against this process's IR without positions (ir_hash_func_unplaced) and is loaded under
the name it was compiled under, which names its symbols.

fetch() and done() are called by the compile path (pyshim/code_cache.c); they never raise into it.
"""
import os
import re
import sys
import time

from . import _lorikeet
from ._cache import sha256  # the extension's SHA-256: hashlib would load OpenSSL, several ms at a process's first hit

FORMAT = _lorikeet.key_format  # 2: no file and first line in the preimage; meta holds the frame and unplaced hash

# The text of the key is made in C (pyshim/cache_key.c), where a process's first cache hit makes it without
# importing this module (pyshim/cache_hit.c); these are its Python face, one writer of the text for both.

_toolchains = {}


def toolchain(backend, fastmath):
    """{name: value} of everything besides the program that the code of backend depends on, in key order:
    lorikeet's version and build id, Python's cache tag, NumPy's major version, the IR pipeline's version, and
    the backend's key_extras (target triple, CPU name and features, LLVM version, math library, fastmath...).
    Memoised per process (none of them changes while it runs); a copy, which the caller may change."""
    k = (backend, bool(fastmath))
    t = _toolchains.get(k)
    if t is None:
        t = _toolchains[k] = dict(_lorikeet.cache_toolchain(backend, bool(fastmath)))
    return t


def preimage(d, signature, overrides=None):
    """The preimage of the key of dispatcher d's code for argument types `signature` (their printed types), as
    UTF-8 bytes. overrides replaces toolchain entries (tests: a different LLVM, CPU feature, build)."""
    return preimage_and_frame(d, signature, overrides)[0]


def preimage_and_frame(d, signature, overrides=None):
    """(preimage, frame): frame is [(file, first line, last line) or None] of each function of the preimage, in
    its order: where the code's positions lie in this process."""
    tc = toolchain(d.backend, d.fastmath)
    if overrides:
        tc = {**tc, **overrides}
    program, frame = _program(d, signature)
    return _header(tc) + program, frame


def _header(tc):
    """The preimage's first lines: its format, then "name value" for each toolchain entry, in order."""
    return _lorikeet.cache_header(tc)


def _program(d, signature):
    """The preimage after the toolchain (options, signature, functions) and the frame."""
    return _lorikeet.cache_program(d, list(signature))


def generation(backend, fastmath=False, tc=None):
    """The store's generation tag: backend (and for gpu the device's architecture), CPU, LLVM and build, so that
    one folder holds one toolchain's code; characters other than [A-Za-z0-9._+-] become '_'."""
    return _lorikeet.cache_generation(backend, dict(tc or toolchain(backend, fastmath)))


# x86-64 levels, best first, with the features target.c checks before compiling for one (each needs the ones
# below it too) and the libmvec ISA its code calls (vecmath.c: 'd' with AVX2 and FMA, 'b' with SSE4.1)
_LEVELS = (("x86-64-v4", ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"), "d"),
           ("x86-64-v3", ("avx", "avx2", "fma", "bmi", "bmi2"), "d"),
           ("x86-64-v2", ("popcnt", "sse4.2", "ssse3"), "b"))


def portable_levels(tc):
    """The x86-64 levels whose code this process may load when its own CPU's entry is missing, best first: those
    whose features the host has and whose vector math calls the variants this process's JIT resolves (its own
    ISA; any, without vector math). None when the process compiles for a level itself (LORIKEET_CPU): then it
    asked for exactly that code."""
    cpu, triple = tc.get("cpu", ""), tc.get("triple", "")
    if not triple.startswith("x86_64") or cpu.startswith("x86-64"):
        return []
    have = {f[1:] for f in tc.get("features", "").split(",") if f.startswith("+")}
    isa = "d" if {"avx2", "fma"} <= have else "b" if "sse4.1" in have else None
    levels = []
    for i, (level, _, level_isa) in enumerate(_LEVELS):
        if all(f in have for _, needs, _ in _LEVELS[i:] for f in needs) and (
                tc.get("vecmath", "0") == "0" or level_isa == isa):
            levels.append(level)
    return levels


# ---- the compile path's calls (pyshim/code_cache.c) ----

_log = os.environ.get("LORIKEET_CACHE_LOG", "") not in ("", "0")


def _store():
    try:
        from . import _cache
    except ImportError:  # the store is not built: no cache
        return None
    st = _cache.store()
    if st is not None and st.stale is None:
        st.stale = stale_generation
    return st


def stale_generation(gen):
    """Whether generation gen was made by another lorikeet build or LLVM than this process's (no process of this
    toolchain reads it: eviction takes it first, `cache prune` removes it). A name without those parts is kept."""
    tc = toolchain("cpu", False)
    lk = re.search(r"-lk([A-Za-z0-9._]+?)\+([A-Za-z0-9_]+)", gen)
    llvm = re.search(r"-llvm([0-9.]+)-", gen)
    mine = generation("cpu", False, tc)
    return bool((lk and lk.group(0) not in mine) or (llvm and llvm.group(0) not in mine))


_last = {}  # "module.qualname" -> the _Ticket of its last lookup in this process (lorikeet/_why.py explains it)


def last_lookup(d):
    """The ticket of the last lookup of dispatcher d's function in this process (any signature), or None."""
    return _last.get(f"{d.py_func.__module__}.{d.py_func.__qualname__}")


class _Ticket:
    __slots__ = ("store", "digest", "preimage", "generation", "name", "signature", "module", "unplaced", "frame",
                 "t0", "reason", "via")

    def __init__(self, store, digest, pre, gen, name, signature, module, t0):
        self.store, self.digest, self.preimage, self.generation = store, digest, pre, gen
        self.name, self.signature, self.module, self.t0 = name, signature, module, t0
        self.unplaced, self.frame = None, []
        self.reason = "absent"
        self.via = None  # the portable level whose entry was loaded in place of this CPU's

    def log(self, event):
        if _log:
            ms = (time.perf_counter() - self.t0) * 1e3
            print(f"lorikeet cache: {event} key={self.digest[:16]} fn={self.name} sig=({', '.join(self.signature)}) "
                  f"{ms:.2f} ms", file=sys.stderr, flush=True)


def _is_module(name):
    """Whether name is a compilation's name: "lk" and 32 lowercase hex digits (no regex: compiling one costs a hit)."""
    return isinstance(name, str) and len(name) == 34 and name.startswith("lk") and \
        not name[2:].strip("0123456789abcdef")


_META_MAGIC = b"LKM1"  # a meta record in marshal's format (pyshim/cache_hit.c reads it too)


def encode_meta(meta):
    """An entry's meta record: a dict of str, int, float, None and lists and tuples of them, in marshal's format
    after a magic (marshal is built into Python and reads it in microseconds, also from C: the json module would
    cost a hit about 1.5 ms to import, ast.literal_eval 0.2 ms to run). marshal's format follows the Python
    version, which the key holds; the entry's checksum is verified before its meta is read."""
    import marshal

    return _META_MAGIC + marshal.dumps(meta)


def decode_meta(data):
    """The dict of a meta record (marshal's format; a Python literal or JSON, as older writers wrote, read too),
    or None."""
    if data[:4] == _META_MAGIC:
        import marshal

        try:
            meta = marshal.loads(data[4:])
        except (ValueError, EOFError, TypeError):
            return None
        return meta if isinstance(meta, dict) else None
    import ast

    try:
        meta = ast.literal_eval(data.decode("utf-8"))
    except (ValueError, SyntaxError, UnicodeDecodeError, MemoryError, RecursionError):
        try:
            import json

            meta = json.loads(data.decode("utf-8", "replace"))
        except ValueError:
            return None
    return meta if isinstance(meta, dict) else None


def _moved(saved, frame):
    """The spans of the entry's frame (saved) that sit elsewhere in this process's (frame): [(old file, old first,
    old last, new file, new first)]; None when the frames cannot be matched (a damaged meta)."""
    if not isinstance(saved, list) or len(saved) != len(frame):
        return None
    spans = []
    for old, new in zip(saved, frame):
        if old is None or new is None:
            if old is not new:
                return None
            continue
        if not (isinstance(old, (list, tuple)) and len(old) == 3 and isinstance(old[0], str) and
                isinstance(old[1], int) and isinstance(old[2], int)):
            return None
        if (old[0], old[1]) != (new[0], new[1]):
            spans.append((old[0], old[1], old[2], new[0], new[1]))
    return spans


def fetch(d, signature, module, unplaced=None):
    """(ticket, saved code or None, the name the code was compiled under, spans that moved) for the compilation of
    d for signature whose name is module (unplaced: its IR's hash without positions), or None when there is no
    cache (LORIKEET_CACHE=0, no usable folder, no store). When the entry for this CPU is missing, one compiled
    for a portable x86-64 level this CPU runs (LORIKEET_CPU=x86-64-v3 in an image built elsewhere) serves."""
    t0 = time.perf_counter()
    try:
        st = _store()
        if st is None:
            return None
        tc = toolchain(d.backend, d.fastmath)
        program, frame = _program(d, signature)
    except Exception as e:
        if _log:
            print(f"lorikeet cache: skip({type(e).__name__}: {e}) fn={d.py_func.__qualname__}", file=sys.stderr)
        return None
    pre = _header(tc) + program
    digest = sha256(pre).hexdigest()
    t = _Ticket(st, digest, pre, generation(d.backend, d.fastmath, tc),
                f"{d.py_func.__module__}.{d.py_func.__qualname__}", list(signature), module, t0)
    t.unplaced, t.frame = unplaced, frame
    _last[t.name] = t
    found = _usable(t, st.load(digest, pre, t.generation))
    if found is None and t.reason == "absent":
        t.reason = st.last_reason() or "absent"  # damaged, unsafe, another key's entry...
    if found is None:
        for level in portable_levels(tc):
            ltc = {**tc, "cpu": level, "features": ""}
            lpre = _header(ltc) + program
            records = st.load(sha256(lpre).hexdigest(), lpre, generation(d.backend, d.fastmath, ltc))
            if records is not None:
                reason = t.reason
                found = _usable(t, records)
                if found is not None:
                    t.via = level
                    break
                t.reason = reason
    if found is None:
        return t, None, None, None
    t.reason = "hit"
    return (t, *found)


def noted_hit(d, signature, digest, preimage, gen):
    """A hit that the compile path found without this module (pyshim/cache_hit.c): noted as its last lookup,
    when this module is loaded already (it is not imported for it)."""
    name = f"{d.py_func.__module__}.{d.py_func.__qualname__}"
    t = _Ticket(None, digest, preimage, gen, name, list(signature), None, time.perf_counter())
    t.reason = "hit"
    _last[name] = t


def _usable(t, records):
    """(code, the name it was compiled under, spans that moved) of an entry found for t, or None (t.reason: why)."""
    if records is None:
        return None
    meta = decode_meta(records.get("meta", b""))
    obj = records.get("obj")
    if meta is None or obj is None:
        t.reason = "no meta"
        return None
    saved_as = meta.get("module")
    if meta.get("format") != FORMAT or not _is_module(saved_as):
        t.reason = "no meta"
        return None
    if saved_as != t.module and (t.unplaced is None or meta.get("unplaced") != t.unplaced):
        # the key matched but the IR would be another: a gap in the key; recompile and replace the entry
        t.reason = f"ir differs ({saved_as} vs {t.module})"
        return None
    spans = _moved(meta.get("frame"), t.frame) if saved_as != t.module else []
    if spans is None:
        t.reason = "no meta"
        return None
    return bytes(obj), saved_as, spans


def loaded(t, error):
    """The saved code was given to the backend: loaded (error "") or refused."""
    if error:
        t.reason = f"load failed: {error[:120]}"
    else:
        t.log(f"hit({t.via})" if t.via else "hit")


class CacheVerifyWarning(RuntimeWarning):
    """LORIKEET_CACHE_VERIFY=1 found a cached function whose code compiled now differs from its entry's: the key
    misses an input the code depends on (please report it)."""


_verify_warned = set()


def verify_failed(t, error):
    """A hit compiled again (LORIKEET_CACHE_VERIFY=1) made other code than the entry's: warn, once per function."""
    t.log("verify(differs)")
    if t.name in _verify_warned:
        return
    _verify_warned.add(t.name)
    import warnings

    what = f"compiling it failed ({error})" if error else "the object compiled now differs from the cached one"
    warnings.warn(f"lorikeet: LORIKEET_CACHE_VERIFY: {t.name}({', '.join(t.signature)}): {what} (key "
                  f"{t.digest[:16]}, {t.generation}): the cache's key misses something this code depends on",
                  CacheVerifyWarning, stacklevel=2)


def done(t, saved, compile_ms):
    """A miss was compiled (saved: the code's bytes, loaded and found) or failed (None): save the former."""
    if saved is None:
        t.log(f"miss({t.reason}) skip(no code)")
        return
    meta = {"format": FORMAT, "module": t.module, "unplaced": t.unplaced, "frame": t.frame, "function": t.name,
            "signature": t.signature, "compile_ms": round(compile_ms, 3), "generation": t.generation}
    ok = t.store.save(t.digest, t.preimage, t.generation, {"obj": saved, "meta": encode_meta(meta)})
    t.log(f"miss({t.reason}) {'write' if ok else 'write failed'}")
