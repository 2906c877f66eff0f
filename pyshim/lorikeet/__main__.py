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


COMMANDS = [add_cache]


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
