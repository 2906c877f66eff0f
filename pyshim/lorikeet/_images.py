"""_images.py: the on-disk layer under NVRTC's memo (issue 11). runtime/nvrtc.c keeps the image NVRTC made of a
module of gpu kernels (a cubin, or PTX where NVRTC does not know the device's architecture) in a memo of the
process; through pyshim/code_cache.c's lk_image_store it also asks this module before running NVRTC and hands it
what NVRTC made, so that a new process loads the image from the store (_cache.py) instead of paying NVRTC again
(about 100 ms of CPU for even a one-line map).

A gpu compilation's own entry (lorikeet/_key.py: host code and image together) makes a warm first call run
neither LLVM nor NVRTC; this layer is what is left when that entry misses while its kernels are the same: an
edit of the function that changes only its host code, its line numbers or comments, another function whose
kernels are the same code, an entry evicted.

The key's preimage (SHA-256 of it names the entry):

    lorikeet-nvrtc-image 1
    lorikeet 0.1.0 build <the extension's build id>
    <nvrtc.c's memo key: the CUDA source without its comments, then one line 'nvrtc 13000: <options>'>

The source holds everything of the program the kernels depend on; the last line NVRTC's version (major and minor:
nvrtcVersion says no more), its options (fastmath among them) and the target (--gpu-architecture=sm_90 for a
cubin, compute_90 for PTX); the build id covers lorikeet's code generation. An entry holds the records 'image' and
'meta' ({'format', 'kind', 'ptx', 'target', 'nvrtc'}); the store checks its checksum and preimage before anything
is handed back, load() checks the meta, and nvrtc.c checks the image's form before the driver sees it. A damaged
entry is a miss (and the store removes it): NVRTC runs and the entry is written again.

load() and save() are called from inside a compile; they never raise into it.
"""
import os
import re
import sys
import time

try:  # CPython's own SHA-256 (see _cache.py)
    from _sha256 import sha256
except ImportError:
    try:
        from _sha2 import sha256
    except ImportError:
        from hashlib import sha256

FORMAT = 1
KIND = "nvrtc image"

_log = os.environ.get("LORIKEET_CACHE_LOG", "") not in ("", "0")
_TAIL = re.compile(rb"\nnvrtc (\d+): --gpu-architecture=(sm|compute)_(\d+) ")
_lorikeet_id = None


def _identity():
    global _lorikeet_id
    if _lorikeet_id is None:
        from . import __version__, _lorikeet

        _lorikeet_id = (__version__, _lorikeet.build_id() or "none")
    return _lorikeet_id


def preimage(key):
    """The preimage of the entry for nvrtc.c's memo key (bytes)."""
    version, build = _identity()
    return f"lorikeet-nvrtc-image {FORMAT}\nlorikeet {version} build {build}\n".encode() + bytes(key)


def target(key):
    """(NVRTC version as 'major.minor', target such as 'sm_90' or 'compute_90', is_ptx) that the key's last line
    names, or None when it names none (then the key is not one nvrtc.c made: no entry)."""
    m = None
    for m in _TAIL.finditer(bytes(key)):
        pass
    if m is None:
        return None
    ver = int(m.group(1))
    return f"{ver // 1000}.{ver % 1000 // 10}", f"{m.group(2).decode()}_{m.group(3).decode()}", m.group(2) == b"compute"


def generation(key):
    """The store's folder for the key's images: NVRTC's version, the target and lorikeet's build."""
    version, build = _identity()
    nvrtc, arch, _ = target(key)
    tag = f"nvrtc{nvrtc}-{arch}-lk{version}+{build[:12]}"
    return "".join(c if c.isalnum() or c in "._+-" else "_" for c in tag)


def _store():
    try:
        from . import _cache
    except ImportError:
        return None
    return _cache.store()


def _say(event, digest, t0, t):
    if _log:
        ms = (time.perf_counter() - t0) * 1e3
        print(f"lorikeet cache: image {event} key={digest[:16]} nvrtc={t[0]} target={t[1]} {ms:.2f} ms",
              file=sys.stderr, flush=True)


def load(key):
    """(image, is_ptx) kept for key, or None (no cache, a miss, an entry that is not an image for this target)."""
    t0 = time.perf_counter()
    try:
        t = target(key)
        st = _store() if t else None
        if st is None:
            return None
        pre = preimage(key)
        digest = sha256(pre).hexdigest()
        records = st.load(digest, pre, generation(key))
        if records is None:
            _say(f"miss({st.last_reason()})", digest, t0, t)
            return None
        import json

        meta = json.loads(records["meta"].decode("utf-8"))
        image = records["image"]
        if meta.get("format") != FORMAT or meta.get("kind") != KIND or meta.get("ptx") is not t[2] \
                or meta.get("target") != t[1] or not isinstance(image, bytes):
            _say("miss(another kind of entry)", digest, t0, t)
            return None
        _say("hit", digest, t0, t)
        return image, t[2]
    except Exception as e:  # never into the compile: a miss
        if _log:
            print(f"lorikeet cache: image skip({type(e).__name__}: {e})", file=sys.stderr, flush=True)
        return None


def save(key, image, is_ptx):
    """Keeps image (what NVRTC made for key); False when nothing was written."""
    t0 = time.perf_counter()
    try:
        t = target(key)
        st = _store() if t else None
        if st is None or bool(is_ptx) is not t[2]:
            return False
        import json

        pre = preimage(key)
        digest = sha256(pre).hexdigest()
        meta = {"format": FORMAT, "kind": KIND, "ptx": t[2], "target": t[1], "nvrtc": t[0]}
        ok = st.save(digest, pre, generation(key), {"image": bytes(image), "meta": json.dumps(meta).encode()})
        _say("write" if ok else f"write failed: {st.last_reason()}", digest, t0, t)
        return ok
    except Exception as e:
        if _log:
            print(f"lorikeet cache: image skip({type(e).__name__}: {e})", file=sys.stderr, flush=True)
        return False
