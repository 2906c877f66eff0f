"""_cache.py: the on-disk store of compiled code (issue 11). One file per key, published atomically, checked in
full before a byte of it is handed back, so that nothing damaged, foreign or planted ever reaches LLVM or the CUDA
driver. It stores bytes: what the key covers and what the records mean is the caller's business (the key's
preimage and the wiring are in the dispatcher). It never raises for any state of the disk: every failure is a miss
or a skipped write (last_reason() says which), and is warned about once where the user has something to fix.
LORIKEET_CACHE_LOG=1: the caller logs one line per compile-path event (it knows the function and signature), the
store only its eviction passes and the folders it skips; LORIKEET_CACHE_LOG=2 adds the store's own line for every
lookup and write.

The interface (the dispatcher codes against these names):

    store() -> Store | None
        The process's store, made on first use from the environment. None when caching is off (LORIKEET_CACHE=0)
        or no folder is usable (one warning when the user named the folder; quiet for the default one).
    Store.load(digest: str, preimage: bytes, generation: str, label: str = "") -> dict[str, bytes] | None
        digest: SHA-256 (64 lowercase hex) of preimage. generation: the subfolder, naming what the code runs on
        and what made it (e.g. 'cpu-x86_64-znver4-llvm16.0.6-lk0.5+ab12cd'). label: what the log line names
        (e.g. 'mod.f (float64[::1], int64)'). Returns the entry's records ({'obj': ..., 'meta': ...}), or None
        on a miss: absent, damaged, another format version, another preimage, unsafe (a symlink, another
        user's file).
    Store.save(digest: str, preimage: bytes, generation: str, records: dict[str, bytes], label: str = "") -> bool
        Publishes the entry atomically (it replaces any entry at that path); False when nothing was written.
    Store.last_reason() -> str
        What the calling thread's last load or save found: 'hit', 'absent', 'damaged: checksum', 'another key's
        entry', 'format version 2', 'a symbolic link', 'unsafe: ...', 'write', 'skip(...)': the reason the caller's
        log line gives.
    Store.stale: None, or a predicate on generation names set by the caller: entries of generations it calls
        stale go first when evicting, and Store.prune_stale() removes them all (with dead writers' temporary files).
    Store.describe(layer) -> [(mtime, size, path, generation, preimage, meta bytes)]: listing, never loading.
A malformed argument (a digest that is not 64 lowercase hex, or on save not the preimage's hash; a generation
outside [A-Za-z0-9._+,=-]{1,160} or starting with '.'; a record kind outside [a-z0-9_]{1,16}; a record that is not
bytes) raises ValueError or TypeError: that is a bug of the caller, not a state of the disk.

Layout of a cache folder (its "root"):
    <root>/v1/                          this format; another format lives beside it and is never read
        CACHEDIR.TAG                    backup tools skip the folder
        .prune                          its mtime: the last eviction pass; its text: the size it left
        tmp/                            writers' temporary files (same file system, so the rename is atomic)
        <generation>/<2 hex>/<digest>.lkc
An entry: magic b'LKCACHE\\0', u32 format version, u64 preimage length (the header), the preimage, then records
(u8 kind length, kind, u64 length, bytes), then SHA-256 of everything before it. All integers little-endian.

Folders: LORIKEET_CACHE_DIR (several separated by os.pathsep: the first writable one takes writes, every one is
searched in order), else $XDG_CACHE_HOME/lorikeet, else ~/.cache/lorikeet (from $HOME only: with HOME unset there
is no default folder). LORIKEET_CACHE_PATH adds read-only folders searched after those. A folder holds native
code that will run as this user, so a folder is used only if it is owned by this user (or, read-only, by root)
and not writable by its group or others, and an entry only if it is a regular file, not a symlink, owned the
same way. The invariant this relies on: the writable folder is private (0700), so only this user can plant
anything below it.
"""
import errno
import os
import stat
import struct
import sys
import time
import _thread  # not threading: importing it costs about 0.7 ms, a quarter of a cache hit's budget
import warnings

try:  # the extension's SHA-256 (ir/hash.c, 3 us/KB): hashlib (and secrets, through hmac) would load OpenSSL, ~3 ms
    from ._lorikeet import sha256 as _sha256_bytes  # at the first hit of every process, and CPython's _sha256 is a

    class sha256:  # shared object to load (0.3 ms); hashlib's interface, for one buffer
        __slots__ = ("_digest",)

        def __init__(self, data=b""):
            self._digest = _sha256_bytes(data)

        def digest(self):
            return self._digest

        def hexdigest(self):
            return self._digest.hex()
except ImportError:  # tests that run the store without the extension
    try:
        from _sha256 import sha256
    except ImportError:
        from hashlib import sha256

FORMAT_VERSION = 1
MAGIC = b"LKCACHE\0"
_HEAD = struct.Struct("<8sIQ")  # magic, format version, preimage length
_KIND_HEAD = struct.Struct("<B")
_LEN = struct.Struct("<Q")
_TRAILER = 32  # SHA-256

DEFAULT_SIZE = 1 << 30
ENTRY_LIMIT = 256 << 20  # no entry is read past this, whatever the file says
PRUNE_TO = 0.8  # eviction leaves the folder at this fraction of the cap
PRUNE_INTERVAL = 3600.0  # seconds between eviction passes, unless the folder is over the cap
TMP_AGE = 3600.0  # a temporary file older than this is an orphan (its writer died)
REFRESH_AGE = 86400.0  # a hit on an entry older than this refreshes its mtime (the recency of eviction)
WRITTEN_LIMIT = 1 << 20  # the shared count of bytes written is read this far (50,000 writes): past it, a pass is due

# Tests only: seconds to sleep after each chunk of a write and the chunk's size, so that a writer can be killed
# in the middle of one.
_write_pause = 0.0
_write_chunk = 1 << 20

# The names a store accepts, checked without regular expressions: compiling three costs a process that opens
# the store about 0.25 ms.
_HEX = "0123456789abcdef"
_GENERATION_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._+,=-")
_KIND_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_"


def _is_digest(s):
    """[0-9a-f]{64}"""
    return len(s) == 64 and not s.strip(_HEX)


def _is_generation(s):
    """[A-Za-z0-9_+,=-][A-Za-z0-9._+,=-]{0,159}"""
    return 1 <= len(s) <= 160 and s[0] != "." and _GENERATION_CHARS.issuperset(s)


def _is_kind(s):
    """[a-z0-9_]{1,16}"""
    return 1 <= len(s) <= 16 and not s.strip(_KIND_CHARS)
_CACHEDIR_TAG = (b"Signature: 8a477f597d28d172789f06886806bc55\n"
                 b"# This file is a cache directory tag created by lorikeet.\n"
                 b"# For information about cache directory tags see https://bford.info/cachedir/\n")
# errors of one entry's path (a directory or a file where a folder should be, a folder emptied by `cache clear`
# meanwhile): that write is skipped; any other failed write turns writes off for the process
_ENTRY_ERRNOS = {errno.EISDIR, errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.ENOENT}
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO planted at an entry's path must not block the open


class CacheWarning(RuntimeWarning):
    """The on-disk cache cannot be used as configured (the reason is in the message); lorikeet runs on."""


_warned = set()
_warned_lock = _thread.allocate_lock()


def _warn_once(message):
    with _warned_lock:
        if message in _warned:
            return
        _warned.add(message)
    warnings.warn(message, CacheWarning, stacklevel=3)


def parse_size(text):
    """Bytes from '1073741824', '500M', '2G', '1.5GiB', '64k' (binary multiples); None if it is no size."""
    import re

    m = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*([kKmMgGtT]?)(?:i?[bB])?\s*", text or "")
    if not m:
        return None
    return int(float(m.group(1)) * 1024 ** " KMGT".index(m.group(2).upper() or " "))


def _default_root(env):
    xdg = env.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return os.path.join(xdg, "lorikeet")
    home = env.get("HOME", "")
    if not os.path.isabs(home):
        return None
    if sys.platform == "darwin":
        return os.path.join(home, "Library", "Caches", "lorikeet")
    return os.path.join(home, ".cache", "lorikeet")


def _folders(env):
    """[(path, may_write, named_by_user)] in search order."""
    given = [os.path.abspath(p) for p in env.get("LORIKEET_CACHE_DIR", "").split(os.pathsep) if p]
    if given:
        folders = [(p, True, True) for p in given]
    else:
        default = _default_root(env)
        folders = [(default, True, False)] if default else []
    folders += [(os.path.abspath(p), False, True) for p in env.get("LORIKEET_CACHE_PATH", "").split(os.pathsep) if p]
    return folders


def _unsafe(st, uid, root_ok):
    """Why a folder or entry with this stat must not be trusted, or None."""
    if st.st_uid != uid and not (root_ok and st.st_uid == 0):
        return f"owned by uid {st.st_uid}, not by this user (uid {uid})"
    if st.st_mode & 0o022:
        return f"writable by other users (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def _check_dir(path, uid, root_ok, follow):
    """None if path is a directory we may trust, else why not ('is ...'). follow: the path may be a symlink (a
    folder the user named); a level lorikeet made never may."""
    st = os.stat(path) if follow else os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    why = _unsafe(st, uid, root_ok)
    return why and "is " + why


def _prepare_writable(root, uid, named):
    """(base, None) when root can take writes; (None, (why, unsafe)) otherwise, why a clause ('it is ...')."""
    try:
        os.makedirs(root, mode=0o700, exist_ok=True)
    except OSError as e:
        return None, (f"it cannot be created ({e.strerror})", False)
    try:
        why = _check_dir(root, uid, False, named)
        if why:
            return None, ("it " + why, why != "is not a directory")
        base = os.path.join(root, f"v{FORMAT_VERSION}")
        if not os.access(root, os.W_OK) and not os.path.isdir(base):
            return None, ("it is not writable", False)
        os.makedirs(base, mode=0o700, exist_ok=True)
        why = _check_dir(base, uid, False, False)
        if why:
            return None, (f"{base} {why}", True)
        tmp = os.path.join(base, "tmp")
        os.makedirs(tmp, mode=0o700, exist_ok=True)
        why = _check_dir(tmp, uid, False, False)
        if why:
            return None, (f"{tmp} {why}", True)
        if not (os.access(base, os.W_OK) and os.access(tmp, os.W_OK)):
            return None, ("it is not writable", False)
        tag = os.path.join(base, "CACHEDIR.TAG")
        if not os.path.lexists(tag):
            fd = os.open(tag, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o600)
            try:
                os.write(fd, _CACHEDIR_TAG)
            finally:
                os.close(fd)
    except FileExistsError:
        pass  # another process made the tag meanwhile
    except OSError as e:  # read-only file system, no permission
        return None, (f"it is not writable ({e.strerror})", False)
    return base, None


def _prepare_readonly(root, uid):
    """(base, None) when root can be read from; (None, (why, unsafe)) otherwise."""
    base = os.path.join(root, f"v{FORMAT_VERSION}")
    try:
        why = _check_dir(root, uid, True, True)
        if why:
            return None, ("it " + why, why != "is not a directory")
        why = _check_dir(base, uid, True, False)
        if why:
            return None, (f"{base} {why}", True)
    except OSError as e:
        return None, (f"it cannot be read ({e.strerror})", False)
    return base, None


class Layer:
    """One cache folder as the store uses it."""
    __slots__ = ("root", "base", "writable")

    def __init__(self, root, base, writable):
        self.root, self.base, self.writable = root, base, writable

    def __repr__(self):
        return f"<cache folder {self.root} {'writable' if self.writable else 'read-only'}>"


def open_store(env=None, honour_off=True, keep_empty=False):
    """A Store made from env (default os.environ), or None when caching is off (with honour_off) or it has no
    usable folder (unless keep_empty: a Store with no folders then says why in .problems). The warnings it gives
    are given once per process."""
    env = os.environ if env is None else env
    log = {"": 0, "0": 0, "2": 2}.get(env.get("LORIKEET_CACHE_LOG", "").strip(), 1)
    if honour_off and env.get("LORIKEET_CACHE", "1").strip().lower() in ("0", "off", "false", "no"):
        if log:
            _log_line("off (LORIKEET_CACHE=0)")
        return None
    cap = DEFAULT_SIZE
    size_text = env.get("LORIKEET_CACHE_SIZE")
    if size_text:
        cap = parse_size(size_text)
        if cap is None:
            cap = DEFAULT_SIZE
            _warn_once(f"lorikeet: LORIKEET_CACHE_SIZE={size_text!r} is not a size (such as 500M, 2G or a number of "
                       f"bytes): the cache keeps to 1 GiB")
    uid = os.geteuid()
    layers, problems, unusable, skipped = [], [], [], []
    writer = None
    folders = _folders(env)
    if not folders:
        problems.append(("(none)", "HOME is unset and neither LORIKEET_CACHE_DIR nor XDG_CACHE_HOME names a folder"))
    for root, may_write, named in folders:
        why = None
        if may_write and writer is None:
            base, why = _prepare_writable(root, uid, named)
            if base:
                writer = Layer(root, base, True)
                layers.append(writer)
                continue
        if not (why and why[1]):
            base, why_ro = _prepare_readonly(root, uid)
            if base:
                layers.append(Layer(root, base, False))
                if why and named:
                    _warn_once(f"lorikeet: the cache folder {root} (LORIKEET_CACHE_DIR) takes no writes "
                               f"({why[0]}): compiled code is read from it but not saved")
                continue
            why = why if why and not why_ro[1] else why_ro
        problems.append((root, why[0]))
        if why[1]:
            _warn_once(f"lorikeet: the cache folder {root} is not used: {why[0]}, and the compiled code in it would "
                       f"run as you (a cache folder is as trusted as your code)")
        elif named and may_write:
            unusable.append((root, why[0]))
        else:
            if not named:
                skipped.append((root, why[0]))
            if log:
                _log_line(f"skip({root}: {why[0]})")
    for root, why in unusable:  # the user named it: say so, and whether anything is left
        _warn_once(f"lorikeet: the cache folder {root} (LORIKEET_CACHE_DIR) is not used: {why}"
                   + ("" if layers else "; compiled code is kept in memory only"))
    quiet = [(root, why) for root, why in problems if root == "(none)" or (root, why) in skipped]
    if not layers and quiet and honour_off:  # nothing said yet of why there is no cache at all: say it once
        folder, why = quiet[0]
        where = why if folder == "(none)" else f"the default folder {folder} is not usable: {why}"
        _warn_once(f"lorikeet: no cache folder ({where}): compiled code is kept in memory only, and each process "
                   f"compiles again; set LORIKEET_CACHE_DIR to a folder of yours, or LORIKEET_CACHE=0 to say that no "
                   f"cache is wanted")
    if not layers and not keep_empty:
        if log:
            _log_line("off (no usable folder: compiled code is kept in memory only)")
        return None
    return Store(layers, cap, uid, log, problems)


def _log_line(text):
    try:
        sys.stderr.write(f"lorikeet cache: {text}\n")
    except Exception:
        pass


def _check_key(digest, preimage, generation, hashed=False):
    """hashed: check that digest is the preimage's (on save: an entry filed under another key's name would never
    be found; a load compares the stored preimage anyway)."""
    if not isinstance(digest, str) or not _is_digest(digest):
        raise ValueError(f"cache digest {digest!r} is not 64 lowercase hex digits")
    if not isinstance(preimage, (bytes, bytearray, memoryview)):
        raise TypeError(f"cache preimage must be bytes, not {type(preimage).__name__}")
    if hashed and sha256(preimage).hexdigest() != digest:
        raise ValueError("cache digest is not the SHA-256 of the preimage")
    if not isinstance(generation, str) or not _is_generation(generation) or generation == "tmp":
        raise ValueError(f"cache generation {generation!r} must match [A-Za-z0-9._+,=-]{{1,160}}, not start "
                         f"with '.' and not be 'tmp'")


def _digest(data):
    """SHA-256 of data: OpenSSL's (7x faster) when something else in the process has loaded it already."""
    openssl = sys.modules.get("_hashlib")
    if openssl is not None and hasattr(openssl, "openssl_sha256"):
        return openssl.openssl_sha256(data).digest()
    return sha256(data).digest()


def encode(preimage, records):
    """The bytes of an entry."""
    parts = [_HEAD.pack(MAGIC, FORMAT_VERSION, len(preimage)), bytes(preimage)]
    for kind in sorted(records):
        data = records[kind]
        if not isinstance(kind, str) or not _is_kind(kind):
            raise ValueError(f"cache record kind {kind!r} must match [a-z0-9_]{{1,16}}")
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"cache record {kind!r} must be bytes, not {type(data).__name__}")
        parts += [_KIND_HEAD.pack(len(kind)), kind.encode(), _LEN.pack(len(data)), bytes(data)]
    body = b"".join(parts)
    return body + _digest(body)


def decode(data, preimage):
    """(records, None) for an entry of this preimage, else (None, (why, damaged)): damaged entries are deleted
    from the writable folder, the others (another version, another key) are left for save() to replace.
    preimage None: any key's entry, its preimage returned as the record named '' (listing, never loading)."""
    if len(data) < _HEAD.size + _TRAILER:
        return None, ("damaged: shorter than a header", True)
    magic, version, plen = _HEAD.unpack_from(data)
    if magic != MAGIC:
        return None, ("damaged: not a lorikeet entry", True)
    if version != FORMAT_VERSION:
        return None, (f"format version {version}", False)
    view = memoryview(data)
    end = len(data) - _TRAILER
    if _digest(view[:end]) != view[end:]:
        return None, ("damaged: checksum", True)
    pos = _HEAD.size + plen
    # a checksum that holds says a lorikeet wrote this; the layout is still checked, as a writer may be buggy
    if pos > end:
        return None, ("damaged: layout", True)
    if preimage is None:
        records = {"": bytes(view[_HEAD.size:pos])}
    elif view[_HEAD.size:pos] != preimage:
        return None, ("another key's entry", False)
    else:
        records = {}
    while pos < end:
        n = data[pos]
        kind = bytes(view[pos + 1:pos + 1 + n]).decode("ascii", "replace")
        pos += 1 + n
        if pos + _LEN.size > end or not _is_kind(kind) or kind in records:
            return None, ("damaged: layout", True)
        (size,) = _LEN.unpack_from(data, pos)
        pos += _LEN.size
        if pos + size > end:
            return None, ("damaged: layout", True)
        records[kind] = bytes(view[pos:pos + size])
        pos += size
    return records, None


def _read_all(fd, size):
    """The file's size bytes, or None if it ends before them."""
    chunks, got = [], 0
    while got < size:
        chunk = os.read(fd, size - got)
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _write_all(fd, blob):
    view = memoryview(blob)
    pos = 0
    while pos < len(view):
        pos += os.write(fd, view[pos:pos + _write_chunk])
        if _write_pause:
            time.sleep(_write_pause)


class Store:
    """The cache folders of a process, in search order; at most one of them takes writes."""

    def __init__(self, layers, cap, uid, log=0, problems=()):
        self.layers = list(layers)
        self.writer = next((layer for layer in self.layers if layer.writable), None)
        self.cap = cap
        self.problems = list(problems)  # (folder, why it is not used)
        self._uid = uid
        self._log = log  # LORIKEET_CACHE_LOG's level
        self._reason = _thread._local()
        self._mutex = _thread.allocate_lock()
        self._writes_off = None  # why writes are off, once a write failed
        self._stamp = None  # (time, size) of the last eviction pass, as read from .prune
        self._written = 0  # bytes this process wrote since
        # stale(generation) -> bool, set by the caller that names generations (lorikeet/_key.py): whether no
        # process of this toolchain reads that generation (another lorikeet build, another LLVM). Eviction removes
        # those entries first; prune_stale() removes them all. None: no generation is stale.
        self.stale = None

    # ---- reading ----

    def load(self, digest, preimage, generation, label=""):
        _check_key(digest, preimage, generation)
        t0 = time.perf_counter()
        reason = "absent"
        rel = os.path.join(generation, digest[:2], digest + ".lkc")
        for layer in self.layers:
            records, why = self._read(layer, os.path.join(layer.base, rel), preimage)
            if records is not None:
                self._reason.text = "hit"
                if self._log >= 2:
                    self._event("hit", digest, label, t0, layer)
                return records
            if why != "absent":
                reason = why
        self._reason.text = reason
        if self._log >= 2:
            self._event(f"miss({reason})", digest, label, t0)
        return None

    def last_reason(self):
        return getattr(self._reason, "text", "")

    def _read(self, layer, path, preimage):
        try:
            fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC)
        except FileNotFoundError:
            return None, "absent"
        except OSError as e:
            if e.errno != errno.ELOOP:
                return None, f"unreadable: {e.strerror}"
            self._untrusted(path, "is a symbolic link")
            return None, "a symbolic link"
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return None, "not a regular file"
            why = _unsafe(st, self._uid, not layer.writable)
            if why:
                self._untrusted(path, "is " + why)
                return None, f"unsafe: {why}"
            if st.st_size > ENTRY_LIMIT:
                return None, "larger than an entry can be"
            data = _read_all(fd, st.st_size)
            if data is None:
                return None, "shortened while read"
            records, why = decode(data, preimage)
            if records is None:
                if why[1] and layer.writable:
                    self._remove_damaged(path, st)
                return None, why[0]
            if layer.writable and time.time() - st.st_mtime > REFRESH_AGE:
                try:  # recency for eviction; atime is not reliable (relatime, noatime)
                    if os.utime in os.supports_fd:
                        os.utime(fd)
                    else:
                        os.utime(path, follow_symlinks=False)
                except OSError:
                    pass
            return records, None
        except OSError as e:  # EIO, ESTALE on NFS: a miss
            return None, f"unreadable: {e.strerror}"
        finally:
            os.close(fd)

    @staticmethod
    def _untrusted(path, why):
        """An entry that could be another user's code: never loaded; said once a process (it is a miss too)."""
        _warn_once(f"lorikeet: cache entries that are not this user's own plain files are ignored, such as "
                   f"{path}, which {why} (someone may be planting code in the cache folder)")

    @staticmethod
    def _remove_damaged(path, st):
        """Deletes the damaged file we read, not a good one another process published at its path meanwhile."""
        try:
            now = os.lstat(path)
            if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
                os.unlink(path)
        except OSError:
            pass

    # ---- writing ----

    def save(self, digest, preimage, generation, records, label=""):
        _check_key(digest, preimage, generation, hashed=True)
        t0 = time.perf_counter()
        blob = encode(preimage, records)
        if self.writer is None or self._writes_off:
            return self._skip(self._writes_off or "no writable folder", digest, label, t0)
        if len(blob) > min(self.cap, ENTRY_LIMIT):
            return self._skip(f"{len(blob)} bytes, over the cache's size", digest, label, t0)
        base = self.writer.base
        final = os.path.join(base, generation, digest[:2], digest + ".lkc")
        tmp = os.path.join(base, "tmp", f"{digest[:16]}.{os.getpid()}.{os.urandom(6).hex()}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o600)
        except OSError as e:
            return self._write_failed(e, digest, label, t0)
        try:
            try:
                _write_all(fd, blob)
            finally:
                os.close(fd)
            self._publish(tmp, final)
        except OSError as e:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            return self._write_failed(e, digest, label, t0)
        self._reason.text = "write"
        if self._log >= 2:
            self._event("write", digest, label, t0)
        self._after_write(len(blob))
        return True

    @staticmethod
    def _publish(tmp, final):
        """Renames tmp into place: readers see the old entry or the new one, never a part of one."""
        fan = os.path.dirname(final)
        for level in (os.path.dirname(fan), fan):  # each level 0700 (makedirs gives the mode to the last only)
            try:
                os.mkdir(level, 0o700)
            except FileExistsError:
                pass
        try:
            os.replace(tmp, final)
        except IsADirectoryError:
            os.rmdir(final)  # an empty directory in the entry's place (a non-empty one stays, and so does the miss)
            os.replace(tmp, final)

    def _write_failed(self, e, digest, label, t0):
        if e.errno in _ENTRY_ERRNOS:
            return self._skip(f"this entry's path: {e.strerror}", digest, label, t0)
        with self._mutex:
            first = self._writes_off is None
            self._writes_off = f"writes off after a failed write ({e.strerror})"
        if first:
            _warn_once(f"lorikeet: writing to the cache folder {self.writer.root} failed ({e.strerror}): compiled "
                       f"code is no longer saved by this process")
        return self._skip(f"write failed: {e.strerror}", digest, label, t0)

    def _skip(self, why, digest, label, t0):
        self._reason.text = f"skip({why})"
        if self._log >= 2:
            self._event(f"skip({why})", digest, label, t0)
        return False

    # ---- eviction ----

    def _after_write(self, nbytes):
        """Evicts when the folder may be over the cap (what the last pass left plus what every process wrote since,
        as the shared count has it) or when the last pass is older than PRUNE_INTERVAL. Only writers evict, so a
        read-only run never does."""
        written = self._count_written(nbytes)
        with self._mutex:
            self._written = written if written is not None else self._written + nbytes
            if self._stamp is None:
                self._stamp = self._read_stamp()
            if not self._due(self._stamp):
                return
        self.prune(if_due=True)

    def _count_written(self, nbytes):
        """Adds nbytes to the folder's count of bytes written since the last eviction pass (tmp/.written, one
        fixed-width record a write, appended: appends of a few bytes do not interleave) and returns the count, or
        None when the file cannot be used (this process's own writes are counted then)."""
        path = os.path.join(self.writer.base, "tmp", ".written")
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | _O_NOFOLLOW | _O_CLOEXEC, 0o600)
        except OSError:
            return None
        try:
            os.write(fd, b"%19d\n" % nbytes)
            data = os.pread(fd, WRITTEN_LIMIT, 0)
            if len(data) >= WRITTEN_LIMIT:
                return self.cap + 1
            return sum(int(r) for r in data.split(b"\n") if r.strip().isdigit())
        except (OSError, ValueError):
            return None
        finally:
            os.close(fd)

    def _due(self, stamp):
        last, size = stamp
        return time.time() - last >= PRUNE_INTERVAL or size + self._written > self.cap

    def _read_stamp(self):
        path = os.path.join(self.writer.base, ".prune")
        try:
            fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC)
            try:
                st = os.fstat(fd)
                return st.st_mtime, int(os.read(fd, 32) or b"0")
            finally:
                os.close(fd)
        except (OSError, ValueError):
            return 0.0, 0

    def _write_stamp(self, size, now):
        """Records a pass that left size bytes; returns the stamp as a later _read_stamp will see it."""
        base = self.writer.base
        tmp = os.path.join(base, "tmp", f"prune.{os.getpid()}.{os.urandom(6).hex()}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o600)
            try:
                os.write(fd, str(size).encode())
            finally:
                os.close(fd)
            os.utime(tmp, (now, now))
            os.replace(tmp, os.path.join(base, ".prune"))
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        return now, size

    def prune(self, cap=None, if_due=False):
        """One eviction pass over the writable folder, under a non-blocking lock (another process pruning: skip):
        temporary files older than TMP_AGE go, and if the entries are over the cap, the least recently used
        ones go until they are at PRUNE_TO of it. Returns (entries removed, bytes left), or None if skipped.
        if_due: skip it too if, once the lock is held, another process's pass turns out to have made it needless."""
        try:
            import fcntl
        except ImportError:  # no flock: no eviction, rather than an eviction two processes run at once
            return None
        if self.writer is None:
            return None
        cap = self.cap if cap is None else cap
        t0 = time.perf_counter()
        try:
            fd = os.open(os.path.join(self.writer.base, "tmp", ".prune.lock"),
                         os.O_RDWR | os.O_CREAT | _O_NOFOLLOW | _O_CLOEXEC, 0o600)
        except OSError:
            return None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                with self._mutex:  # read what the other pass leaves, next time
                    self._stamp, self._written = None, 0
                if self._log >= 2:
                    _log_line("skip(eviction: another process is evicting)")
                return None
            if if_due:
                stamp = self._read_stamp()
                with self._mutex:
                    if stamp[0] > self._stamp[0]:  # a pass ran since we read the stamp; it counted our entries
                        self._stamp, self._written = stamp, 0
                    if not self._due(self._stamp):
                        return None
            try:
                os.truncate(os.path.join(self.writer.base, "tmp", ".written"), 0)
            except OSError:
                pass
            now = time.time()
            removed = self._remove_orphans(now)
            # another build's or LLVM's generations first (no process of this toolchain loads them), then by age
            stale = self.stale or (lambda gen: False)
            entries = sorted(self.entries(), key=lambda e: (not stale(e[3]), e[0]))
            total = sum(e[1] for e in entries)
            if total > cap:
                target = int(cap * PRUNE_TO)
                for mtime, size, path, _ in entries:
                    if total <= target:
                        break
                    try:
                        os.unlink(path)
                    except FileNotFoundError:
                        pass
                    except OSError:
                        continue
                    total -= size
                    removed += 1
            stamp = self._write_stamp(total, now)
            with self._mutex:
                self._stamp, self._written = stamp, 0
            if self._log:
                ms = (time.perf_counter() - t0) * 1e3
                _log_line(f"evict removed={removed} left={total} bytes cap={cap} {ms:.2f} ms")
            return removed, total
        finally:
            os.close(fd)  # releases the lock

    def _remove_orphans(self, now, age=None, dead_writers=False):
        """Removes temporary files older than age (default TMP_AGE); dead_writers: also those older than a minute
        whose writer (the pid in the name) is no longer running on this machine."""
        age = TMP_AGE if age is None else age
        removed = 0
        tmp = os.path.join(self.writer.base, "tmp")
        try:
            with os.scandir(tmp) as it:
                for f in it:
                    if not f.name.endswith(".tmp"):
                        continue
                    try:
                        st = f.stat(follow_symlinks=False)
                        old = now - st.st_mtime >= age or (dead_writers and now - st.st_mtime >= 60.0 and
                                                           not _running(f.name))
                        if stat.S_ISREG(st.st_mode) and st.st_uid == self._uid and old:
                            os.unlink(f.path)
                            removed += 1
                    except OSError:
                        pass
        except OSError:
            pass
        return removed

    def entries(self, layer=None):
        """(mtime, size, path, generation) of every entry file of ours in a folder (default: the writable one):
        regular files named <digest>.lkc two levels below a generation, owned by this user (or root in a read-only
        folder). Nothing else in the folder is counted, evicted or cleared."""
        layer = layer or self.writer
        if layer is None:
            return []
        found = []
        for gen in _subdirs(layer.base):
            if gen.name == "tmp":
                continue
            for fan in _subdirs(gen.path):
                if len(fan.name) != 2:
                    continue
                try:
                    with os.scandir(fan.path) as it:
                        for f in it:
                            if not (f.name.endswith(".lkc") and _is_digest(f.name[:-4])):
                                continue
                            try:
                                st = f.stat(follow_symlinks=False)
                            except OSError:
                                continue
                            if stat.S_ISREG(st.st_mode) and not _unsafe(st, self._uid, not layer.writable):
                                found.append((st.st_mtime, st.st_size, f.path, gen.name))
                except OSError:
                    pass
        return found

    def prune_stale(self):
        """Removes from the writable folder every entry of a stale generation (see .stale) and the temporary files
        of writers that died, then the folders left empty. Returns (entries, bytes, temporary files) removed."""
        if self.writer is None:
            return 0, 0, 0
        count = size = 0
        stale = self.stale or (lambda gen: False)
        for _, n, path, gen in self.entries():
            if not stale(gen):
                continue
            try:
                os.unlink(path)
            except OSError:
                continue
            count += 1
            size += n
        orphans = self._remove_orphans(time.time(), dead_writers=True)
        self._remove_empty_folders()
        return count, size, orphans

    def describe(self, layer):
        """(mtime, size, path, generation, preimage, meta) of every entry of a folder whose checksum holds: meta is
        the entry's 'meta' record as bytes (None if it has none). For listing and explaining; never for loading."""
        found = []
        for mtime, size, path, gen in self.entries(layer):
            try:
                fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC)
            except OSError:
                continue
            try:
                data = _read_all(fd, min(size, ENTRY_LIMIT))
            except OSError:
                data = None
            finally:
                os.close(fd)
            records, _ = decode(data, None) if data else (None, None)
            if records is not None:
                pre = records.pop("", b"")
                found.append((mtime, size, path, gen, pre, records.get("meta")))
        return found

    def _remove_empty_folders(self):
        for gen in _subdirs(self.writer.base):
            if gen.name == "tmp":
                continue
            for fan in _subdirs(gen.path):
                _rmdir_quiet(fan.path)
            _rmdir_quiet(gen.path)

    def clear(self):
        """Removes every entry of ours and every temporary file from the writable folder, then the folders
        that are left empty; never another file, never a read-only folder. Returns (entries, bytes) removed."""
        if self.writer is None:
            return 0, 0
        count = size = 0
        for _, n, path, _ in self.entries():
            try:
                os.unlink(path)
            except OSError:
                continue
            count += 1
            size += n
        self._remove_orphans(time.time(), age=0.0)
        self._remove_empty_folders()
        return count, size

    # ---- log ----

    def _event(self, event, digest, label, t0, layer=None):
        ms = (time.perf_counter() - t0) * 1e3
        where = f" from {layer.root}" if layer is not None and layer is not self.writer else ""
        _log_line(f"{event} key={digest[:16]}{' ' + label if label else ''} {ms:.2f} ms{where}")


def _running(tmp_name):
    """Whether the writer of a temporary file (<digest16>.<pid>.<random>.tmp) may still be running."""
    parts = tmp_name.split(".")
    if len(parts) != 4 or not parts[1].isdigit():
        return True
    try:
        os.kill(int(parts[1]), 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _subdirs(path):
    try:
        with os.scandir(path) as it:
            return [d for d in it if d.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def _rmdir_quiet(path):
    try:
        os.rmdir(path)
    except OSError:
        pass


_store = None
_made = False
_store_lock = _thread.allocate_lock()


def store():
    """The process's Store (made once, from the environment at first use), or None: see the module's docstring."""
    global _store, _made
    if not _made:
        with _store_lock:
            if not _made:
                _store = open_store()
                _made = True
    return _store


def _reset():
    """Tests: forget the process's store and the warnings given, so that the next store() reads the environment
    again."""
    global _store, _made
    with _store_lock:
        _store, _made = None, False
    with _warned_lock:
        _warned.clear()
