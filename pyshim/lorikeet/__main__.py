"""python -m lorikeet: lorikeet's command line.

Each subcommand is a function add_<name>(subparsers) that adds its parser and sets `run` to the function that
carries it out (taking the parsed arguments, returning the exit status); a new subcommand (info, warmup,
calibrate) is one more such function, listed in COMMANDS.
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


def add_cache(sub):
    p = sub.add_parser("cache", help="the on-disk cache of compiled code: its folders, size and entries",
                       description="Shows the cache folders (LORIKEET_CACHE_DIR, else ~/.cache/lorikeet; "
                                   "LORIKEET_CACHE_PATH for read-only ones), their size and entries per "
                                   "generation; 'clear' removes lorikeet's entries from the writable folder.")
    p.add_argument("action", nargs="?", choices=["show", "clear"], default="show")
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


COMMANDS = [add_cache, add_info]


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
