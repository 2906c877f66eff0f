"""The on-disk store of compiled code (pyshim/lorikeet/_cache.py, issue 11): what it gives back is exactly what
was saved for that preimage, or nothing; never a damaged, foreign, planted or half-written entry, never an
exception, whatever the folder holds or whoever else writes it. Every test runs against its own temporary
LORIKEET_CACHE_DIR, through the store's API (the key and the wiring into calls are the dispatcher's half)."""
import hashlib
import os
import random
import signal
import stat
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest

import lorikeet as lk
from lorikeet import _cache

GEN = "cpu-x86_64-test-llvm16.0.6-lk0+0000"
ROOT_USER = os.geteuid() == 0
PYSHIM = os.path.join(os.path.dirname(__file__), "..", "pyshim")


def key(name):
    """(digest, preimage) of a made-up key named name."""
    preimage = f"lorikeet-cache 1\nbackend cpu\nfunction tests.{name}\n  source def {name}(a): ...\n".encode()
    return hashlib.sha256(preimage).hexdigest(), preimage


def entry_path(root, digest, generation=GEN):
    return os.path.join(root, "v1", generation, digest[:2], digest + ".lkc")


def hyp(a, b):
    return np.sqrt(a * a + b * b)


@pytest.fixture(scope="module")
def obj():
    """A real payload: the object file the cpu backend made for hyp(float64[::1], float64[::1])."""
    a = np.arange(8.0)
    return lk.jit(hyp, backend="cpu")._save((a, a))


@pytest.fixture
def records(obj):
    return {"obj": obj, "meta": b'{"entry": "hyp", "compile_ms": 12.5}'}


@pytest.fixture
def root(tmp_path, monkeypatch):
    """A fresh cache folder in LORIKEET_CACHE_DIR, and a store that reads the environment again."""
    for name in ("LORIKEET_CACHE", "LORIKEET_CACHE_PATH", "LORIKEET_CACHE_SIZE", "LORIKEET_CACHE_LOG",
                 "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    folder = tmp_path / "cache"
    monkeypatch.setenv("LORIKEET_CACHE_DIR", str(folder))
    _cache._reset()
    yield str(folder)
    _cache._reset()


def fresh_store():
    """The store a new process would make from the environment."""
    _cache._reset()
    return _cache.store()


def cache_warnings(fn):
    """(fn's result, the CacheWarnings it gave)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn()
    return result, [w for w in caught if issubclass(w.category, _cache.CacheWarning)]


def saved_entry(root, records, name="f"):
    digest, preimage = key(name)
    assert _cache.store().save(digest, preimage, GEN, records)
    with open(entry_path(root, digest), "rb") as f:
        return digest, preimage, f.read()


def plant(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


# ---- round trip ----

def test_saved_object_comes_back_and_runs_in_a_fresh_dispatcher(root, records):
    digest, preimage = key("hyp")
    s = _cache.store()
    assert s.load(digest, preimage, GEN) is None
    assert s.save(digest, preimage, GEN, records)
    got = fresh_store().load(digest, preimage, GEN)
    assert got == records
    a, b = np.linspace(-3, 3, 101), np.linspace(0, 5, 101)
    g = lk.jit(hyp, backend="cpu")
    g._load((a, b), got["obj"])
    np.testing.assert_array_equal(g(a, b), np.sqrt(a * a + b * b))


def test_entries_and_folders_are_private_and_tagged(root, records):
    digest, _, _ = saved_entry(root, records)
    path = entry_path(root, digest)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    d = os.path.dirname(path)
    while len(d) >= len(root):
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700, d
        d = os.path.dirname(d)
    with open(os.path.join(root, "v1", "CACHEDIR.TAG"), "rb") as f:
        assert f.read().startswith(b"Signature: 8a477f597d28d172789f06886806bc55")


def test_caller_bugs_raise_instead_of_touching_the_disk(root):
    digest, preimage = key("f")
    s = _cache.store()
    with pytest.raises(ValueError):
        s.save(digest, preimage + b"x", GEN, {"obj": b"x"})  # digest of another preimage
    assert s.load(digest, preimage + b"x", GEN) is None
    with pytest.raises(ValueError):
        s.load(digest.upper(), preimage, GEN)
    for gen in ("../escape", "a/b", ".hidden", "tmp", ""):
        with pytest.raises(ValueError):
            s.save(digest, preimage, gen, {"obj": b"x"})
    with pytest.raises(ValueError):
        s.save(digest, preimage, GEN, {"../obj": b"x"})
    assert not os.path.exists(os.path.join(root, "escape"))


def test_a_hit_does_not_load_openssl(root):
    """hashlib (and secrets, through hmac) load OpenSSL: ~3 ms at a process's first hit, the whole budget."""
    code = ("import sys, lorikeet._cache as c\n"
            "from lorikeet._cache import sha256\n"  # CPython's own: _sha256 to 3.11, _sha2 from 3.12
            "p = b'key'; d = sha256(p).hexdigest(); s = c.store()\n"
            "assert s.save(d, p, 'gen', {'obj': b'x' * 5000}) and s.load(d, p, 'gen')\n"
            "print(sorted(m for m in ('_hashlib', 'hashlib', 'hmac', 'secrets') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=PYSHIM), capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_both_sha256_give_the_same_trailer(monkeypatch):
    """The store uses OpenSSL's SHA-256 when the process has loaded it, else CPython's: entries written either
    way are read either way."""
    data = random.Random(1).randbytes(70001)
    assert _cache._digest(data) == hashlib.sha256(data).digest()
    monkeypatch.delitem(sys.modules, "_hashlib")
    assert _cache._digest(data) == hashlib.sha256(data).digest()


# ---- damage ----

def test_truncation_at_every_sixteenth_is_a_miss_and_the_file_is_removed(root, records):
    s = _cache.store()
    digest, preimage, good = saved_entry(root, records)
    path = entry_path(root, digest)
    for k in range(16):
        plant(path, good[:len(good) * k // 16])
        assert s.load(digest, preimage, GEN) is None, k
        assert not os.path.exists(path), k  # a damaged entry of ours is deleted
    assert s.save(digest, preimage, GEN, records)
    assert s.load(digest, preimage, GEN) == records


def test_hundreds_of_random_byte_flips_are_all_misses(root, records):
    s = _cache.store()
    digest, preimage, good = saved_entry(root, records)
    path = entry_path(root, digest)
    rng = random.Random(11)
    for case in range(400):
        bad = bytearray(good)
        for _ in range(1 + case % 3):  # one to three bytes anywhere: header, preimage, records, trailer
            bad[rng.randrange(len(bad))] ^= rng.randrange(1, 256)
        plant(path, bytes(bad))
        assert s.load(digest, preimage, GEN) is None, case
    plant(path, good)
    assert s.load(digest, preimage, GEN) == records


def test_garbage_of_the_right_length_and_an_empty_file_are_misses(root, records):
    s = _cache.store()
    digest, preimage, good = saved_entry(root, records)
    path = entry_path(root, digest)
    for data in (b"", bytes(len(good)), random.Random(3).randbytes(len(good)), good[:8]):
        plant(path, data)
        assert s.load(digest, preimage, GEN) is None


def test_a_valid_checksum_over_a_broken_layout_is_a_miss(root, records):
    """A writer's bug (records longer than the file), hashed as if it were right: the layout is still checked."""
    s = _cache.store()
    digest, preimage, good = saved_entry(root, records)
    body = bytearray(good[:-32])
    pos = _cache._HEAD.size + len(preimage)
    n = body[pos]
    body[pos + 1 + n:pos + 1 + n + 8] = (1 << 40).to_bytes(8, "little")  # first record's length
    plant(entry_path(root, digest), bytes(body) + hashlib.sha256(body).digest())
    assert s.load(digest, preimage, GEN) is None


def test_a_directory_in_the_entrys_place_is_a_miss_and_writes_go_on(root, records):
    s = _cache.store()
    digest, preimage = key("f")
    path = entry_path(root, digest)
    os.makedirs(path)
    assert s.load(digest, preimage, GEN) is None
    assert s.save(digest, preimage, GEN, records)  # an empty directory is replaced
    assert s.load(digest, preimage, GEN) == records
    digest2, preimage2 = key("g")
    os.makedirs(os.path.join(entry_path(root, digest2), "something"))
    assert s.load(digest2, preimage2, GEN) is None
    assert not s.save(digest2, preimage2, GEN, records)  # a non-empty one stays, and is never loaded
    assert os.path.isdir(os.path.join(entry_path(root, digest2), "something"))
    digest3, preimage3 = key("h")
    assert s.save(digest3, preimage3, GEN, records)  # that one path did not turn writes off
    assert s.load(digest3, preimage3, GEN) == records


def test_a_fifo_in_the_entrys_place_does_not_block(root):
    digest, preimage = key("f")
    path = entry_path(root, digest)
    os.makedirs(os.path.dirname(path))
    os.mkfifo(path)
    assert _cache.store().load(digest, preimage, GEN) is None


def test_another_format_version_is_ignored_left_alone_and_replaced(root, records):
    s = _cache.store()
    digest, preimage, good = saved_entry(root, records)
    body = bytearray(good[:-32])
    body[8:12] = (_cache.FORMAT_VERSION + 1).to_bytes(4, "little")
    other = bytes(body) + hashlib.sha256(body).digest()
    path = entry_path(root, digest)
    plant(path, other)
    assert s.load(digest, preimage, GEN) is None
    with open(path, "rb") as f:
        assert f.read() == other
    assert s.save(digest, preimage, GEN, records)
    assert s.load(digest, preimage, GEN) == records


def test_an_entry_planted_at_the_right_path_for_another_preimage_is_a_miss(root, records):
    s = _cache.store()
    digest, preimage = key("f")
    _, other_preimage = key("evil")
    plant(entry_path(root, digest), _cache.encode(other_preimage, {"obj": b"\xcc" * 64}))  # a valid entry
    assert s.load(digest, preimage, GEN) is None
    assert s.save(digest, preimage, GEN, records)
    assert s.load(digest, preimage, GEN) == records


def test_other_generations_and_formats_do_not_meet(root, records):
    s = _cache.store()
    digest, preimage = key("f")
    assert s.save(digest, preimage, GEN, records)
    assert s.load(digest, preimage, "gpu-sm90-nvrtc13.0-lk0+0000") is None
    assert not os.path.exists(os.path.join(root, "v2"))


# ---- no writable cache ----

def test_a_folder_under_a_file_gives_memory_only_and_one_warning(tmp_path, monkeypatch, root):
    (tmp_path / "file").write_text("not a folder")
    monkeypatch.setenv("LORIKEET_CACHE_DIR", str(tmp_path / "file" / "cache"))
    s, caught = cache_warnings(lambda: (fresh_store(), _cache.store(), _cache.open_store()))
    assert s == (None, None, None)
    assert len(caught) == 1 and "memory only" in str(caught[0].message)


@pytest.mark.skipif(ROOT_USER, reason="root writes through chmod 0500; the folder-under-a-file case covers root")
def test_a_read_only_folder_serves_hits_saves_nothing_and_warns_once(root, records):
    digest, preimage, _ = saved_entry(root, records)
    for d, _, _ in os.walk(root):
        os.chmod(d, 0o500)
    try:
        s, caught = cache_warnings(fresh_store)
        assert len(caught) == 1 and "not saved" in str(caught[0].message)
        assert s.load(digest, preimage, GEN) == records
        digest2, preimage2 = key("g")
        assert not s.save(digest2, preimage2, GEN, records)
    finally:
        for d, _, _ in os.walk(root):
            os.chmod(d, 0o700)


def test_a_read_only_file_system_serves_hits_and_saves_nothing(root, records, monkeypatch):
    """As a read-only mount looks (access(W_OK) fails with EROFS even for root): the folder is read, not written."""
    digest, preimage, _ = saved_entry(root, records)
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **k: False if mode & os.W_OK and str(p).startswith(root)
                        else real_access(p, mode, **k))
    s, caught = cache_warnings(fresh_store)
    assert len(caught) == 1 and "not saved" in str(caught[0].message)
    assert s.writer is None and s.load(digest, preimage, GEN) == records
    assert not s.save(*key("g"), GEN, records)


@pytest.mark.skipif(ROOT_USER, reason="root can create any folder")
def test_an_unwritable_empty_folder_gives_memory_only(tmp_path, monkeypatch, root):
    os.mkdir(tmp_path / "locked", 0o500)
    monkeypatch.setenv("LORIKEET_CACHE_DIR", str(tmp_path / "locked"))
    s, caught = cache_warnings(fresh_store)
    assert s is None and len(caught) == 1


def test_home_unset_or_pointing_nowhere_gives_memory_only_and_one_warning(tmp_path, monkeypatch, root):
    monkeypatch.delenv("LORIKEET_CACHE_DIR")
    monkeypatch.delenv("HOME", raising=False)
    s, caught = cache_warnings(fresh_store)
    assert s is None and len(caught) == 1 and "HOME is unset" in str(caught[0].message)
    assert "memory only" in str(caught[0].message)
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("HOME", str(tmp_path / "file"))  # nowhere a folder can be made, even as root
    s, caught = cache_warnings(fresh_store)
    assert s is None and len(caught) == 1 and "cannot be created" in str(caught[0].message)
    monkeypatch.setenv("LORIKEET_CACHE", "0")  # no cache wanted: nothing to say
    s, caught = cache_warnings(fresh_store)
    assert s is None and caught == []
    monkeypatch.delenv("LORIKEET_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    s, caught = cache_warnings(fresh_store)
    assert s.writer.root == str(tmp_path / "home" / ".cache" / "lorikeet") and caught == []
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert fresh_store().writer.root == str(tmp_path / "xdg" / "lorikeet")


def test_lorikeet_cache_0_turns_the_store_off(root, monkeypatch):
    monkeypatch.setenv("LORIKEET_CACHE", "0")
    assert fresh_store() is None
    assert not os.path.exists(root)


def test_a_failed_write_turns_writes_off_for_the_process(root, records, monkeypatch):
    """A full disk (ENOSPC in the middle of a write): no entry, no temporary file left, one warning, and the
    process stops trying; reads go on."""
    s = _cache.store()
    digest, preimage, _ = saved_entry(root, records)

    def full(fd, blob):
        os.write(fd, blob[:100])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_cache, "_write_all", full)
    d2, p2 = key("g")
    d3, p3 = key("h")
    ok, caught = cache_warnings(lambda: (s.save(d2, p2, GEN, records), s.save(d3, p3, GEN, records)))
    assert ok == (False, False) and len(caught) == 1 and "No space" in str(caught[0].message)
    monkeypatch.undo()
    assert s.save(d3, p3, GEN, records) is False  # off for the rest of the process
    assert not [f for f in os.listdir(os.path.join(root, "v1", "tmp")) if f not in (".prune.lock", ".written")]
    assert not os.path.exists(entry_path(root, d2))
    assert s.load(digest, preimage, GEN) == records


# ---- layers ----

def test_the_first_writable_folder_takes_writes_and_later_ones_serve_hits(tmp_path, monkeypatch, root, records):
    digest, preimage, _ = saved_entry(root, records)  # fills `root`
    (tmp_path / "file").write_text("")
    first, ro = str(tmp_path / "file" / "x"), str(tmp_path / "ro")
    monkeypatch.setenv("LORIKEET_CACHE_DIR", os.pathsep.join([first, str(tmp_path / "writes"), root]))
    monkeypatch.setenv("LORIKEET_CACHE_PATH", ro)
    s, _ = cache_warnings(fresh_store)
    assert [(layer.root, layer.writable) for layer in s.layers] == [(str(tmp_path / "writes"), True), (root, False)]
    assert s.load(digest, preimage, GEN) == records
    d2, p2 = key("g")
    assert s.save(d2, p2, GEN, records)
    assert os.path.exists(entry_path(str(tmp_path / "writes"), d2)) and not os.path.exists(entry_path(root, d2))


def test_lorikeet_cache_path_is_a_read_only_layer_filled_ahead_of_time(tmp_path, monkeypatch, root, records):
    digest, preimage, _ = saved_entry(root, records)
    os.rename(root, tmp_path / "image")
    monkeypatch.setenv("LORIKEET_CACHE_PATH", str(tmp_path / "image"))
    s = fresh_store()
    assert s.load(digest, preimage, GEN) == records
    plant(entry_path(str(tmp_path / "image"), digest), b"damaged")
    assert s.load(digest, preimage, GEN) is None
    assert os.path.exists(entry_path(str(tmp_path / "image"), digest))  # never deleted from a read-only layer


# ---- permissions ----

def test_a_group_writable_root_is_not_used_and_warns_once(root, records):
    digest, preimage, _ = saved_entry(root, records)
    os.chmod(root, 0o770)
    s, caught = cache_warnings(lambda: (fresh_store(), _cache.open_store()))
    assert s == (None, None)
    assert len(caught) == 1 and "writable by other users" in str(caught[0].message)


def test_a_world_writable_read_only_layer_is_not_used(tmp_path, monkeypatch, root, records):
    digest, preimage, _ = saved_entry(root, records)
    os.rename(root, tmp_path / "shared")
    os.chmod(tmp_path / "shared" / "v1", 0o777)
    monkeypatch.setenv("LORIKEET_CACHE_PATH", str(tmp_path / "shared"))
    s, caught = cache_warnings(fresh_store)
    assert len(caught) == 1 and s.load(digest, preimage, GEN) is None


def test_a_symlinked_entry_is_not_followed(tmp_path, monkeypatch, root, records):
    """The link points at a valid entry of this very key: only O_NOFOLLOW stops it."""
    digest, preimage, good = saved_entry(root, records)
    elsewhere = tmp_path / "elsewhere.lkc"
    elsewhere.write_bytes(good)
    path = entry_path(root, digest)
    os.unlink(path)
    os.symlink(elsewhere, path)
    s = fresh_store()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert s.load(digest, preimage, GEN) is None and s.load(digest, preimage, GEN) is None
    assert len(caught) == 1 and "symbolic link" in str(caught[0].message)  # once a process
    assert elsewhere.read_bytes() == good  # not deleted through the link either


def test_a_symlinked_default_root_is_refused_but_a_named_one_is_used(tmp_path, monkeypatch, root):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "home" / ".cache").mkdir(parents=True)
    os.symlink(real, tmp_path / "home" / ".cache" / "lorikeet")
    monkeypatch.delenv("LORIKEET_CACHE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    s, caught = cache_warnings(fresh_store)
    assert s is None and len(caught) == 1 and "symbolic link" in str(caught[0].message)
    monkeypatch.setenv("LORIKEET_CACHE_DIR", str(tmp_path / "home" / ".cache" / "lorikeet"))
    assert fresh_store().writer is not None


@pytest.mark.skipif(not ROOT_USER, reason="giving a file to another user needs root")
def test_an_entry_owned_by_another_user_is_not_loaded(root, records):
    digest, preimage, _ = saved_entry(root, records)
    os.chown(entry_path(root, digest), 65534, 65534)  # nobody
    s = fresh_store()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert s.load(digest, preimage, GEN) is None and s.load(digest, preimage, GEN) is None
    assert len(caught) == 1 and "owned by uid 65534" in str(caught[0].message)  # once a process
    assert os.path.exists(entry_path(root, digest))  # not ours to delete


@pytest.mark.skipif(not ROOT_USER, reason="giving a folder to another user needs root")
def test_a_root_owned_by_another_user_is_not_used(root, records):
    saved_entry(root, records)
    os.chown(root, 65534, 65534)
    s, caught = cache_warnings(fresh_store)
    assert s is None and len(caught) == 1 and "owned by uid 65534" in str(caught[0].message)


# ---- size and eviction ----

def folder_bytes(root):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(os.path.join(root, "v1"))
               for f in files if f.endswith(".lkc"))


def test_a_2mb_cap_holds_over_500_entries(root, monkeypatch, obj):
    monkeypatch.setenv("LORIKEET_CACHE_SIZE", "2M")
    s = fresh_store()
    assert s.cap == 2 << 20
    rng = random.Random(5)
    kept = key("hot")
    assert s.save(*kept, GEN, {"obj": obj})
    monkeypatch.setattr(_cache, "REFRESH_AGE", 0.0)  # every hit refreshes, so the hot entry stays recent
    for i in range(500):
        digest, preimage = key(f"f{i}")
        assert s.save(digest, preimage, GEN, {"obj": obj + rng.randbytes(rng.randrange(4000, 16000))})
        assert folder_bytes(root) <= 2 << 20, i
        if i % 10 == 0:
            time.sleep(0.002)  # mtimes apart
            assert s.load(*kept, GEN) == {"obj": obj}, i
    assert folder_bytes(root) > (2 << 20) // 2  # the cap is used, not emptied
    assert s.load(*kept, GEN) == {"obj": obj}


def test_processes_writing_at_once_keep_to_the_cap(root):
    """Each process counts what all of them wrote since the last pass (tmp/.written), not only its own writes:
    30 processes of one entry each under a 40 KiB cap, none of which alone comes near it."""
    code = ("import sys, lorikeet._cache as c\n"
            "from lorikeet._cache import sha256\n"
            "k = sys.argv[1].encode()\n"
            "assert c.store().save(sha256(k).hexdigest(), k, 'gen', {'obj': b'x' * 3000})\n")
    env = dict(os.environ, PYTHONPATH=PYSHIM, LORIKEET_CACHE_SIZE="40K")
    procs = [subprocess.Popen([sys.executable, "-c", code, f"k{i}"], env=env) for i in range(30)]
    assert [p.wait(timeout=120) for p in procs] == [0] * 30
    assert folder_bytes(root) <= 40 << 10
    assert folder_bytes(root) > (40 << 10) // 2


def test_eviction_removes_the_least_recently_used(root, monkeypatch, records):
    s = _cache.store()
    now = time.time()
    keys = [key(f"f{i}") for i in range(10)]
    for i, (digest, preimage) in enumerate(keys):
        assert s.save(digest, preimage, GEN, records)
        os.utime(entry_path(root, digest), (now - 10 * 86400 + i * 3600,) * 2)  # f0 oldest
    monkeypatch.setattr(_cache, "REFRESH_AGE", 86400.0)
    assert s.load(*keys[0], GEN) == records  # older than a day: the hit makes it the most recent
    assert os.stat(entry_path(root, keys[0][0])).st_mtime >= now
    size = os.path.getsize(entry_path(root, keys[0][0]))
    removed, left = s.prune(cap=5 * size)
    assert removed == 6 and left == 4 * size  # down to 80% of the cap
    assert [os.path.exists(entry_path(root, d)) for d, _ in keys] == [True] + [False] * 6 + [True] * 3


def test_a_recent_hit_does_not_touch_the_file(root, records, monkeypatch):
    digest, preimage, _ = saved_entry(root, records)
    path = entry_path(root, digest)
    then = time.time() - 3600
    os.utime(path, (then, then))
    monkeypatch.setattr(_cache, "REFRESH_AGE", 7200.0)
    assert _cache.store().load(digest, preimage, GEN) == records
    assert os.stat(path).st_mtime == then


def test_orphaned_temporary_files_go_at_the_hourly_pass(root, records):
    s = _cache.store()
    saved_entry(root, records)  # the first write's pass stamps .prune
    tmp = os.path.join(root, "v1", "tmp")
    old, young = os.path.join(tmp, "dead.1.aa.tmp"), os.path.join(tmp, "busy.2.bb.tmp")
    stray = os.path.join(root, "v1", GEN, "notes.txt")
    for p in (old, young, stray):
        plant(p, b"x" * 100)
    os.utime(old, (time.time() - 7200,) * 2)
    d2, p2 = key("g")
    assert s.save(d2, p2, GEN, records)
    assert os.path.exists(old)  # the last pass is recent and the folder is under the cap: no pass
    stamp = os.path.join(root, "v1", ".prune")
    os.utime(stamp, (time.time() - 7200,) * 2)
    d3, p3 = key("h")
    assert fresh_store().save(d3, p3, GEN, records)
    assert not os.path.exists(old) and os.path.exists(young) and os.path.exists(stray)


def test_an_entry_deleted_or_shortened_while_read(root, records, monkeypatch):
    digest, preimage, _ = saved_entry(root, records)
    path = entry_path(root, digest)
    s = _cache.store()
    real_open, real_fstat = os.open, os.fstat

    def open_after_delete(p, *a, **k):
        if p == path:
            os.unlink(path)
        return real_open(p, *a, **k)

    monkeypatch.setattr(os, "open", open_after_delete)
    assert s.load(digest, preimage, GEN) is None  # gone between the lookup and the open
    monkeypatch.undo()
    assert s.save(digest, preimage, GEN, records)

    def fstat_then(action):
        def fstat(fd):
            st = real_fstat(fd)
            action()
            return st
        return fstat

    monkeypatch.setattr(os, "fstat", fstat_then(lambda: os.unlink(path)))
    assert s.load(digest, preimage, GEN) == records  # deleted once open: the data is still whole
    monkeypatch.undo()
    assert s.save(digest, preimage, GEN, records)
    monkeypatch.setattr(os, "fstat", fstat_then(lambda: os.truncate(path, 100)))
    assert s.load(digest, preimage, GEN) is None  # shortened after the size was read
    monkeypatch.undo()


@pytest.mark.parametrize("text,size", [("500M", 500 << 20), ("2G", 2 << 30), ("1048576", 1 << 20),
                                       ("1.5GiB", 3 << 29), ("64k", 64 << 10), ("2 MB", 2 << 20)])
def test_size_settings(text, size):
    assert _cache.parse_size(text) == size


def test_a_size_that_is_not_one_warns_and_keeps_the_default(root, monkeypatch):
    monkeypatch.setenv("LORIKEET_CACHE_SIZE", "lots")
    s, caught = cache_warnings(fresh_store)
    assert s.cap == 1 << 30 and len(caught) == 1


# ---- concurrency ----

CHILD = textwrap.dedent('''
    import hashlib, importlib.util, os, random, sys, time
    spec = importlib.util.spec_from_file_location("lk_cache", sys.argv[1])
    c = importlib.util.module_from_spec(spec); spec.loader.exec_module(c)
    mode, start, rounds, seed = sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    GEN = "cpu-x86_64-test-llvm16.0.6-lk0+0000"
    def entry(i):
        pre = f"lorikeet-cache 1\\nfunction k{i}\\n".encode()
        obj = random.Random(i).randbytes(40000 + 9000 * (i % 12))
        return hashlib.sha256(pre).hexdigest(), pre, {"obj": obj, "meta": b"%d" % i}
    keys = [entry(i) for i in range(12)]
    s = c.store()
    if mode == "slow":  # a writer that can be killed in the middle of a write
        c._write_chunk, c._write_pause = 8192, 0.002
        for i in range(100):
            d, p, r = entry(1000 + i)
            assert s.save(d, p, GEN, r)
            print("published", i, flush=True)
        sys.exit(0)
    while time.time() < start:
        time.sleep(0.001)
    rng, hits, writes = random.Random(seed), 0, 0
    for _ in range(rounds):
        rng.shuffle(keys)
        for d, p, r in keys:
            got = s.load(d, p, GEN)
            if got is not None and got != r:
                print("WRONG", d); sys.exit(1)
            hits += got is not None
            if got is None or mode == "writer":
                writes += s.save(d, p, GEN, r)
    print(hits, writes)
''')


def test_processes_started_together_see_whole_entries_or_none(tmp_path, root):
    child = tmp_path / "child.py"
    child.write_text(CHILD)
    start = time.time() + 1.0
    procs = [subprocess.Popen([sys.executable, str(child), _cache.__file__, "writer" if i % 2 else "reader",
                               str(start), "5", str(i)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(8)]
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, (out, err)
    hits = sum(int(out.split()[0]) for out, _ in outs)
    assert hits > 8 * 12  # readers met entries that writers kept replacing
    files = [f for d, _, fs in os.walk(os.path.join(root, "v1", GEN)) for f in fs]
    assert len(files) == 12 and all(f.endswith(".lkc") for f in files)  # one file per key
    assert [f for f in os.listdir(os.path.join(root, "v1", "tmp")) if f.endswith(".tmp")] == []


def test_a_writer_killed_mid_write_leaves_no_torn_entry(tmp_path, root):
    child = tmp_path / "child.py"
    child.write_text(CHILD)
    tmp = os.path.join(root, "v1", "tmp")

    def partial_entries():
        found = []
        for f in os.listdir(tmp):
            try:
                if f.endswith(".tmp") and os.path.getsize(os.path.join(tmp, f)) > 0:
                    found.append(f)
            except FileNotFoundError:  # renamed into place meanwhile
                pass
        return found

    for attempt in range(3):  # the kill can fall between two entries (a few percent): then try again
        p = subprocess.Popen([sys.executable, str(child), _cache.__file__, "slow", "0", "0", "0"],
                             stdout=subprocess.PIPE, text=True)
        for line in p.stdout:
            if line.startswith("published 10"):
                break
        deadline = time.time() + 10
        while not partial_entries() and time.time() < deadline:  # kill when a temporary file holds part of one
            time.sleep(0.0005)
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        p.stdout.close()
        assert p.returncode == -signal.SIGKILL
        orphans = [f for f in os.listdir(tmp) if f.endswith(".tmp")]
        if orphans:
            break
    assert orphans  # killed inside a write
    s = fresh_store()
    seen = 0
    for i in range(100):
        pre = f"lorikeet-cache 1\nfunction k{1000 + i}\n".encode()
        digest = hashlib.sha256(pre).hexdigest()
        if os.path.exists(entry_path(root, digest)):
            seen += 1
            got = s.load(digest, pre, GEN)
            assert got == {"obj": random.Random(1000 + i).randbytes(40000 + 9000 * ((1000 + i) % 12)),
                           "meta": b"%d" % (1000 + i)}
    assert 11 <= seen < 100
    for f in orphans:
        os.utime(os.path.join(tmp, f), (time.time() - 7200,) * 2)
    s.prune()
    assert [f for f in os.listdir(tmp) if f.endswith(".tmp")] == []


# ---- log and command line ----

def test_last_reason_and_the_log(root, records, monkeypatch, capsys):
    """The caller's log line gives last_reason(); LORIKEET_CACHE_LOG=2 adds the store's own line per event."""
    digest, preimage = key("f")
    path = entry_path(root, digest)

    def events(s):
        s.load(digest, preimage, GEN, label="tests.f (float64[::1],)")
        reasons = [s.last_reason()]
        s.save(digest, preimage, GEN, records)
        reasons.append(s.last_reason())
        s.load(digest, preimage, GEN)
        reasons.append(s.last_reason())
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) - 1)
        s.load(digest, preimage, GEN)
        reasons.append(s.last_reason())
        return reasons

    monkeypatch.setenv("LORIKEET_CACHE_LOG", "1")
    assert events(fresh_store()) == ["absent", "write", "hit", "damaged: checksum"]
    assert [line for line in capsys.readouterr().err.splitlines() if "evict" not in line] == []
    monkeypatch.setenv("LORIKEET_CACHE_LOG", "2")
    events(fresh_store())
    lines = [line for line in capsys.readouterr().err.splitlines() if "evict" not in line]
    assert [line.split()[2].split("(")[0] for line in lines] == ["miss", "write", "hit", "miss"]
    assert "miss(absent)" in lines[0] and "tests.f (float64[::1],)" in lines[0] and digest[:16] in lines[0]
    assert "miss(damaged: checksum)" in lines[3]


def run_cli(*args, env):
    return subprocess.run([sys.executable, "-m", "lorikeet", *args], env=env, capture_output=True, text=True,
                          timeout=60)


def test_the_cache_command_shows_and_clears_only_our_entries(tmp_path, root, records):
    s = _cache.store()
    for name, gen in (("f", GEN), ("g", GEN), ("h", "gpu-sm90-nvrtc13.0-lk0+0000")):
        digest, preimage = key(name)
        assert s.save(digest, preimage, gen, records)
    ro = tmp_path / "ro"
    os.rename(root, ro)  # becomes a read-only layer, and `root` is filled again
    s = fresh_store()
    for name in ("f", "g"):
        assert s.save(*key(name), GEN, records)
    stray = os.path.join(root, "v1", GEN, "keep-me.txt")
    plant(stray, b"not ours")
    env = dict(os.environ, PYTHONPATH=PYSHIM, LORIKEET_CACHE_DIR=root, LORIKEET_CACHE_PATH=str(ro))
    out = run_cli("cache", env=env)
    assert out.returncode == 0, out.stderr
    assert f"{root} (writable): 2 entries" in out.stdout and f"{ro} (read-only): 3 entries" in out.stdout
    assert f"{GEN}: 2 entries" in out.stdout and "gpu-sm90-nvrtc13.0-lk0+0000: 1 entry" in out.stdout
    out = run_cli("cache", "clear", env=env)
    assert out.returncode == 0 and "removed 2 entries" in out.stdout, out.stderr
    assert os.path.exists(os.path.join(root, "v1", "CACHEDIR.TAG"))
    assert len([f for d, _, fs in os.walk(ro) for f in fs if f.endswith(".lkc")]) == 3  # read-only: untouched
    assert os.path.exists(stray)
    out = run_cli("cache", env=env)
    assert f"{root} (writable): 0 entries" in out.stdout
    out = run_cli("cache", env=dict(env, LORIKEET_CACHE="0"))
    assert "off (LORIKEET_CACHE=0)" in out.stdout and "(read-only): 3 entries" in out.stdout
