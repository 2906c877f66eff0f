"""python -m lorikeet: lorikeet's command line.

Each subcommand is a function add_<name>(subparsers) that adds its parser and sets `run` to the function that
carries it out (taking the parsed arguments, returning the exit status); a new subcommand (info, warmup,
calibrate, coverage) is one more such function, listed in COMMANDS.
"""
import argparse
import os
import sys
import warnings


def entries(n):
    return f"{n} entr{'y' if n == 1 else 'ies'}"


def human(n):
    """A byte count as people read it: '0 B', '3.4 KiB', '1.0 GiB'."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def _open_cache_store():
    """The store as the environment makes it, even when caching is off (so that it can be shown and cleared);
    the folders' problems are listed by the caller rather than warned about."""
    from . import _cache

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", _cache.CacheWarning)
        return _cache.open_store(honour_off=False, keep_empty=True)


def run_cache(args):
    from . import _cache

    st = _open_cache_store()
    if args.action in ("list", "prune", "why"):
        return {"list": cache_list, "prune": cache_prune, "why": cache_why}[args.action](st, args)
    if args.action == "clear":
        if st.writer is None:
            print("no writable cache folder: nothing cleared")
            return 0
        count, size = st.clear()
        print(f"removed {entries(count)} ({human(size)}) from {st.writer.root}")
        return 0
    off = os.environ.get("LORIKEET_CACHE", "1").strip().lower() in ("0", "off", "false", "no")
    print(f"on-disk cache: {'off (LORIKEET_CACHE=0)' if off else 'on'}, format v{_cache.FORMAT_VERSION}")
    if not st.layers:
        print("no usable cache folder: compiled code is kept in memory only")
    else:
        named = " (LORIKEET_CACHE_SIZE)" if os.environ.get("LORIKEET_CACHE_SIZE") else ""
        print(f"size limit: {human(st.cap)}{named}")
        for layer in st.layers:
            found = st.entries(layer)
            total = sum(e[1] for e in found)
            kind = "writable" if layer.writable else "read-only"
            print(f"{layer.root} ({kind}): {entries(len(found))}, {human(total)}")
            per_gen = {}
            for _, size, _, gen in found:
                count, nbytes = per_gen.get(gen, (0, 0))
                per_gen[gen] = (count + 1, nbytes + size)
            for gen in sorted(per_gen):
                count, nbytes = per_gen[gen]
                print(f"    {gen}: {entries(count)}, {human(nbytes)}")
    for root, why in st.problems:
        print(f"not used: {root} ({why})")
    return 0


def cache_list(st, args):
    """One line per entry of every folder: function, signature, backend, size, last use, generation."""
    import time

    from . import _key

    rows = []
    for layer in st.layers:
        for mtime, size, _, gen, _, meta in st.describe(layer):
            m = (_key.decode_meta(meta) if meta else None) or {}
            sig = m.get("signature")
            sig = f"({', '.join(sig)})" if isinstance(sig, list) else "(?)"
            stale = " (stale)" if _key.stale_generation(gen) else ""
            rows.append((m.get("function", "?") + sig, gen.split("-")[0], human(size),
                         time.strftime("%Y-%m-%d %H:%M", time.localtime(mtime)), gen + stale, layer.root))
    if not rows:
        print("no entries")
        return 0
    rows.sort()
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    print(f"{'function (signature)':<{widths[0]}}  {'backend':<{widths[1]}}  {'size':>{widths[2]}}  "
          f"{'last use':<{widths[3]}}  generation")
    for r in rows:
        print(f"{r[0]:<{widths[0]}}  {r[1]:<{max(widths[1], 7)}}  {r[2]:>{widths[2]}}  {r[3]:<{widths[3]}}  {r[4]}"
              + (f"  [{r[5]}]" if len(st.layers) > 1 else ""))
    print(f"{entries(len(rows))}; last use is the time of the last write, or of a hit a day or more after it")
    return 0


def cache_prune(st, args):
    """Removes the entries of other lorikeet builds and LLVM versions, and temporary files of dead writers."""
    from . import _key

    if st.writer is None:
        print("no writable cache folder: nothing pruned")
        return 0
    st.stale = _key.stale_generation
    count, size, orphans = st.prune_stale()
    print(f"removed {entries(count)} ({human(size)}) of other lorikeet builds or LLVM versions and {orphans} "
          f"orphaned temporary file{'s' if orphans != 1 else ''} from {st.writer.root}")
    return 0


def cache_why(st, args):
    """Runs TARGET's file as __main__ (or imports its module), so that its calls look their code up, with the
    cache read but never written, and explains the last lookup of its function."""
    import runpy

    import lorikeet

    from . import _cache, _key, _why

    target = args.target or ""
    where, _, func = target.rpartition(":")
    if not where or not func:
        print("lorikeet cache why: name a function as FILE.py:FUNC or MODULE:FUNC", file=sys.stderr)
        return 2
    live = _key._store()
    if live is not None:
        live._writes_off = "cache why only reads"  # the lookups it explains must stay misses
    try:
        if where.endswith(".py") or os.sep in where:
            sys.path.insert(0, os.path.dirname(os.path.abspath(where)))
            scope = runpy.run_path(where, run_name="__main__")  # its functions' names as when run as a script
        else:
            scope = vars(_import_target(where))
    except SystemExit:
        scope = None
    except Exception as e:
        print(f"lorikeet cache why: running {where} failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    d = scope.get(func.split(".")[0]) if scope is not None else None
    for part in func.split(".")[1:]:
        d = getattr(d, part, None)
    if not isinstance(d, lorikeet.Dispatcher):
        print(f"lorikeet cache why: {func} in {where} is not a jitted function", file=sys.stderr)
        return 1
    for line in _why.explain(d, live or st):
        print(line)
    return 0


def add_cache(sub):
    p = sub.add_parser("cache", help="the on-disk cache of compiled code: its folders, size and entries",
                       description="Shows the cache folders (LORIKEET_CACHE_DIR, else ~/.cache/lorikeet; "
                                   "LORIKEET_CACHE_PATH for read-only ones), their size and entries per "
                                   "generation. 'list': every entry (function, signature, backend, size, last "
                                   "use); 'prune': removes entries of other lorikeet builds or LLVM versions and "
                                   "temporary files of writers that died; 'why FILE.py:FUNC' (or MODULE:FUNC): "
                                   "runs the module and says why the function's last lookup missed, comparing "
                                   "its key with the nearest entry's; 'clear' removes lorikeet's entries from "
                                   "the writable folder.")
    p.add_argument("action", nargs="?", choices=["show", "list", "prune", "why", "clear"], default="show")
    p.add_argument("target", nargs="?", metavar="FILE.py:FUNC", help="for 'why': the function")
    p.set_defaults(run=run_cache)


def key_fields(text):
    """The backend's key_extras ('name=value' separated by ';' or newlines) as a dict."""
    fields = {}
    for item in text.replace("\n", ";").split(";"):
        name, eq, value = item.partition("=")
        if eq:
            fields[name.strip()] = value.strip()
    return fields


def run_info(args):
    import platform
    import textwrap

    import numpy

    from . import __version__, _lorikeet, get_backend, get_num_threads

    def line(name, value):
        print(f"{name + ':':<18}{value}")

    cpu = key_fields(_lorikeet.key_extras("cpu", False))
    line("lorikeet", f"{__version__} (build {_lorikeet.build_id()[:12]}, {os.path.dirname(__file__)})")
    line("Python", f"{platform.python_version()} ({sys.executable})")
    line("NumPy", numpy.__version__)
    line("LLVM", cpu.get("llvm", "unknown"))
    print("backends:")
    for name in ("cpu", "openmp", "gpu"):
        ok = _lorikeet.backend_available(name)
        if ok is True:
            extra = f", {get_num_threads()} threads" if name == "openmp" else ""
            print(f"    {name:<8}available{extra}")
        else:
            print(f"    {name:<8}not available: {ok[1]}")
    line("default backend", get_backend() + (" (LORIKEET_BACKEND)" if os.environ.get("LORIKEET_BACKEND") else ""))
    from . import _auto

    calibration, where = _auto.status()
    if calibration:
        line("auto", f"calibrated {calibration.get('measured_at', '')} ({where})")
        line("", _auto.describe(calibration.get("crossovers") or {}))
    else:
        line("auto", "not calibrated: defaults, host data stays on cpu/openmp (python -m lorikeet calibrate)")
    named = " (LORIKEET_CPU)" if os.environ.get("LORIKEET_CPU") else ""
    line("CPU", f"{cpu.get('cpu', 'unknown')}{named}, {cpu.get('triple', '')}")
    features = sorted(f[1:] for f in cpu.get("features", "").split(",") if f.startswith("+"))
    wrapped = textwrap.fill(" ".join(features) or "(none)", 118, initial_indent=" " * 18, subsequent_indent=" " * 18)
    line("CPU features", wrapped.lstrip())
    gpu = _lorikeet._gpu_info()
    if gpu is None:
        line("GPU", f"none: {_lorikeet.gpu_available()[1]}")
    else:
        major, minor = gpu["compute_capability"]
        driver = gpu["driver_version"]
        line("GPU", f"{gpu['name']}, compute capability {major}.{minor}, {gpu['multiprocessors']} SMs, "
                    f"{human(gpu['memory_bytes'])}, CUDA driver {driver // 1000}.{driver % 1000 // 10}")
    nvrtc, why = _lorikeet._nvrtc_status()
    line("NVRTC", f"{nvrtc // 1000}.{nvrtc % 1000 // 10}" if nvrtc else f"not available: {why}")
    version, where = _lorikeet._cublas_status()
    cublas = f"{version // 10000}.{version % 10000 // 100}.{version % 100}"
    line("cuBLAS", f"{cublas} ({where})" if version else f"not used: {where}")
    st = _open_cache_store()
    off = os.environ.get("LORIKEET_CACHE", "1").strip().lower() in ("0", "off", "false", "no")
    if not st.layers:
        line("cache", "no usable folder: compiled code is kept in memory only")
    for layer in st.layers:
        found = st.entries(layer)
        kind = "writable" if layer.writable else "read-only"
        state = ", off (LORIKEET_CACHE=0)" if off else ""
        line("cache", f"{layer.root} ({kind}{state}): {entries(len(found))}, {human(sum(e[1] for e in found))}")
    for root, why in st.problems:
        line("cache", f"not used: {root} ({why})")
    return 0


def add_info(sub):
    p = sub.add_parser("info", help="versions, backends (and why one is not available), CPU, GPU, cache",
                       description="Prints the versions of lorikeet, Python, NumPy and LLVM; which backends can "
                                   "run here and, for those that cannot, why; the CPU and the features the JIT "
                                   "compiles for; the GPU, NVRTC and cuBLAS; the cache folders and their size.")
    p.set_defaults(run=run_info)


def _import_target(target):
    """The module that TARGET names: a dotted module name, or a .py file run as a module (named after the file,
    its folder first on sys.path so that it imports its neighbours)."""
    import importlib
    import importlib.util

    if target.endswith(".py") or os.sep in target or os.path.isfile(target):
        path = os.path.abspath(target)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no such file: {target}")
        name = os.path.splitext(os.path.basename(path))[0]
        sys.path.insert(0, os.path.dirname(path))
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    return importlib.import_module(target)


def _declared_functions(module):
    """(name, dispatcher) of every jitted function defined in module that declares signatures, in name order."""
    import lorikeet

    found = []
    for name, obj in sorted(vars(module).items()):
        if isinstance(obj, lorikeet.Dispatcher) and obj.declared_signatures and \
                getattr(obj.py_func, "__module__", None) == module.__name__:
            found.append((name, obj))
    return found


def run_warmup(args):
    import time

    import lorikeet

    try:
        module = _import_target(args.target)
    except Exception as e:
        print(f"lorikeet warmup: importing {args.target} failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    backends = [b.strip() for b in args.backend.split(",") if b.strip()] if args.backend else [None]
    for b in backends:
        if b not in (None, "cpu", "openmp", "gpu"):
            print(f"lorikeet warmup: unknown backend {b!r} (cpu, openmp, gpu)", file=sys.stderr)
            return 2
    functions = _declared_functions(module)
    # an "auto" function is warmed for every backend it may choose here
    own = {name: (lorikeet._auto_backends() if d.backend == "auto" else (d.backend,)) for name, d in functions}
    items = [(name, d, sig, b) for bs in backends for name, d in functions for b in ([bs] if bs else own[name])
             for sig in d.declared_signatures]
    if not items:
        print(f"lorikeet warmup: no jitted function of {module.__name__} declares signatures", file=sys.stderr)
        return 0
    unavailable = {}
    for b in {it[3] for it in items}:
        ok = lorikeet._lorikeet.backend_available(b)
        if ok is not True:
            unavailable[b] = ok[1]
    start = time.perf_counter()
    results = []  # (label, backend, outcome, ms)
    for n, (name, d, sig, backend) in enumerate(items, 1):
        label = f"{module.__name__}.{name}{sig}"
        print(f"[{n}/{len(items)}] {label} {backend} ({time.perf_counter() - start:.1f} s)", file=sys.stderr,
              flush=True)
        t0 = time.perf_counter()
        if backend in unavailable:
            outcome = f"failed: the {backend} backend is unavailable"
        else:
            target = d._sibling(backend)
            hits, compiles = target._cache_hits, target._compiles
            try:
                target._warm_signature(sig)
            except Exception as e:
                outcome = f"failed: {type(e).__name__}: {e}"
            else:
                outcome = "cached" if target._cache_hits > hits else "compiled" if target._compiles > compiles \
                    else "already compiled"
        results.append((label, backend, outcome, (time.perf_counter() - t0) * 1e3))
    failed = [r for r in results if r[2].startswith("failed")]
    width = max(len(r[0]) for r in results)
    for label, backend, outcome, ms in results:
        print(f"  {label:<{width}}  {backend:<6}  {outcome.splitlines()[0]}  ({ms:.0f} ms)")
    counts = {}
    for r in results:
        k = r[2].split(":")[0]
        counts[k] = counts.get(k, 0) + 1
    summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))
    print(f"lorikeet warmup: {len(results)} signature{'s' if len(results) != 1 else ''} of {len(functions)} "
          f"function{'s' if len(functions) != 1 else ''} in {time.perf_counter() - start:.1f} s: {summary}")
    for label, backend, outcome, _ in failed:
        print(f"FAILED {label} [{backend}]: {outcome[len('failed: '):]}", file=sys.stderr)
    for backend, why in sorted(unavailable.items()):
        print(f"{backend} unavailable: {why}", file=sys.stderr)
    return 1 if failed else 0


def add_warmup(sub):
    p = sub.add_parser("warmup", help="compile every declared signature of a module's jitted functions",
                       description="Imports MODULE (a dotted name, or a .py file run as a module), compiles every "
                                   "signature declared by its jitted functions (@lk.jit(signatures=...)) for each "
                                   "backend, into the on-disk cache, and exits 1 naming each signature that failed.")
    p.add_argument("target", metavar="MODULE_OR_FILE")
    p.add_argument("--backend", default=None,
                   help="comma-separated backends to compile for (cpu, openmp, gpu); default: each function's own")
    p.set_defaults(run=run_warmup)


def add_calibrate(sub):
    from ._auto import add_calibrate as add

    add(sub)


def add_coverage(sub):
    from ._coverage import add_coverage as add

    add(sub)


COMMANDS = [add_cache, add_info, add_warmup, add_calibrate, add_coverage]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m lorikeet", description="lorikeet's command line")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add in COMMANDS:
        add(sub)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
