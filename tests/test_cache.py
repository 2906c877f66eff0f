"""The on-disk code cache's key and its compile path (issue 11): a second process loads what the first compiled,
and loads nothing stale. Each program runs in fresh processes against a temporary LORIKEET_CACHE_DIR, and
compares with CPython running the same functions (f.py_func) or NumPy."""
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import lorikeet as lk
from lorikeet import _key

HERE = os.path.dirname(os.path.abspath(__file__))
PYSHIM = os.path.join(os.path.dirname(HERE), "pyshim")

PRELUDE = f"""\
import sys
import json, os
import numpy as np
import lorikeet as lk
"""


def write(folder, name, text):
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write(textwrap.dedent(text))
    return path


def run(script, cache, env=None, cwd=None, args=()):
    """Runs script in a fresh process with cache as LORIKEET_CACHE_DIR; its last stdout line, as JSON."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("LORIKEET_")}
    e.update({"PYTHONPATH": PYSHIM, "LORIKEET_CACHE_DIR": str(cache), "PYTHONDONTWRITEBYTECODE": "1",
              "LORIKEET_CACHE_LOG": "1"})
    e.update(env or {})
    p = subprocess.run([sys.executable, script, *args], env=e, cwd=cwd or os.path.dirname(script),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    out["log"] = [line for line in p.stderr.splitlines() if line.startswith("lorikeet cache:")]
    return out


def entries(cache):
    """The cache's entries: <64-hex digest>.lkc (the store's temporary files live in tmp/ under other names)."""
    found = []
    for root, _, files in os.walk(cache):
        found += [os.path.join(root, n) for n in files if len(n.split(".")[0]) == 64 and n.endswith(".lkc")]
    return sorted(found)


# ---- a hit, and staleness ----

CALLEE = """\
import lorikeet as lk

@lk.jit
def g(x):
    return x * 2.0
"""

MAIN = PRELUDE + """\
from mod_b import g                                   # a callee in another module
K = int(os.environ.get("LK_T_K", "3"))                # a global constant
EPS = float.fromhex(os.environ.get("LK_T_EPS", "0x1.999999999999ap-4"))
S = float(os.environ.get("LK_T_S", "2.0"))

def make(n):
    @lk.jit
    def h(x):
        return x + n                                  # a closure value
    return h

h = make(int(os.environ.get("LK_T_N", "10")))

@lk.jit
def scaled(x, s=S):                                   # a default argument
    return x * s

@lk.jit
def f(a):
    return g(a) + K + h(a) + scaled(a), a * EPS

x = np.linspace(0.0, 3.0, 7)
r = [v.tolist() for v in f(x)]
ref = [(g.py_func(x) + K + h.py_func(x) + scaled.py_func(x)).tolist(), (x * EPS).tolist()]  # CPython, callees too
print(json.dumps({"r": r, "ref": ref, "info": f.cache_info()}))
"""


@pytest.fixture
def project(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    write(src, "mod_b.py", CALLEE)
    main = write(src, "main.py", MAIN)
    return main, tmp_path / "cache"


def test_second_process_hits_without_compiling(project):
    main, cache = project
    first = run(main, cache)
    assert first["info"] == {"hits": 0, "misses": 1, "compiles": 1}
    assert first["r"] == first["ref"]
    second = run(main, cache)
    assert second["info"] == {"hits": 1, "misses": 0, "compiles": 0}
    assert second["r"] == first["r"]
    assert [line.split()[2] for line in second["log"]] == ["hit"]
    assert len(entries(cache)) == 1


def _recompiles(main, cache, env=None):
    out = run(main, cache, env)
    assert out["info"] == {"hits": 0, "misses": 1, "compiles": 1}, out["log"]
    # a new key, not an old entry found wanting (the load's check of the IR is a second line of defence)
    assert [line.split()[2] for line in out["log"]] == ["miss(absent)"], out["log"]
    assert out["r"] == out["ref"]
    return out


def test_stale_inputs_recompile(project):
    main, cache = project
    base = run(main, cache)["r"]
    # the callee's body, in another module: same size, same mtime
    callee = os.path.join(os.path.dirname(main), "mod_b.py")
    st = os.stat(callee)
    with open(callee, "w") as f:
        f.write(CALLEE.replace("x * 2.0", "x * 5.0"))
    os.utime(callee, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(callee).st_size == st.st_size
    edited = _recompiles(main, cache)["r"]
    assert edited != base
    # a global constant, a closure value, a default argument's value, each without any source change
    assert _recompiles(main, cache, {"LK_T_K": "4"})["r"] != edited
    assert _recompiles(main, cache, {"LK_T_N": "11"})["r"] != edited
    assert _recompiles(main, cache, {"LK_T_S": "2.5"})["r"] != edited
    # a float constant one bit away
    nxt = np.nextafter(0.1, 1.0).hex()
    assert _recompiles(main, cache, {"LK_T_EPS": nxt})["r"] != edited
    # and each is an entry of its own: the first again is a hit
    assert run(main, cache, {"LK_T_K": "4"})["info"]["hits"] == 1
    assert len(entries(cache)) == 6


def test_keys_do_not_change_from_run_to_run(project, tmp_path):
    main, cache = project
    assert run(main, cache, {"PYTHONHASHSEED": "1"})["info"]["misses"] == 1
    n = len(entries(cache))
    assert run(main, cache, {"PYTHONHASHSEED": "2"})["info"]["hits"] == 1
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert run(main, cache, {"PYTHONHASHSEED": "3"}, cwd=str(elsewhere))["info"]["hits"] == 1
    now = time.time() + 5
    for name in os.listdir(os.path.dirname(main)):
        os.utime(os.path.join(os.path.dirname(main), name), (now, now))
    assert run(main, cache)["info"]["hits"] == 1
    for k in range(6):  # ten runs in all, each in another folder with another hash seed
        where = tmp_path / f"run{k}"
        where.mkdir()
        assert run(main, cache, {"PYTHONHASHSEED": str(100 + k)}, cwd=str(where))["info"]["hits"] == 1
    assert len(entries(cache)) == n


CONCURRENT = PRELUDE + """@lk.jit
def f(a, k):
    return (a * k).sum()

@lk.jit
def g(a):
    return np.sqrt(a * a + 1.0)

x, y = np.arange(6.0), np.arange(6, dtype=np.int32)
out = [float(f(x, 2)), float(f(y, 3)), float(g(x).sum()), float(g(y).sum())]
ref = [float(f.py_func(x, 2)), float(f.py_func(y, 3)), float(g.py_func(x).sum()), float(g.py_func(y).sum())]
print(json.dumps({"out": out, "ref": ref}))
"""


def test_processes_started_together_on_a_cold_cache_agree_and_leave_one_entry_per_key(tmp_path):
    """Six processes at once compiling the same two functions for the same two signatures each, three rounds
    (the first on a cold cache): every result right, and four entries afterwards."""
    script = write(str(tmp_path), "conc.py", CONCURRENT)
    cache = tmp_path / "cache"
    e = {k: v for k, v in os.environ.items() if not k.startswith("LORIKEET_")}
    e.update({"PYTHONPATH": PYSHIM, "LORIKEET_CACHE_DIR": str(cache), "PYTHONDONTWRITEBYTECODE": "1"})
    for _ in range(3):
        procs = [subprocess.Popen([sys.executable, script], env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for _ in range(6)]
        for p in procs:
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
            res = json.loads(out.strip().splitlines()[-1])
            assert res["out"] == res["ref"]
    assert len(entries(cache)) == 4


def test_cache_off(project):
    main, cache = project
    run(main, cache, {"LORIKEET_CACHE": "0"})
    out = run(main, cache, {"LORIKEET_CACHE": "0"})
    assert out["info"] == {"hits": 0, "misses": 0, "compiles": 1}
    assert entries(cache) == []
    off = write(os.path.dirname(main), "off.py", MAIN.replace("@lk.jit\ndef f(a)", "@lk.jit(cache=False)\ndef f(a)"))
    assert run(off, cache)["info"] == {"hits": 0, "misses": 0, "compiles": 1}
    assert entries(cache) == []


# ---- options and run-time settings ----

BOUNDS = PRELUDE + """\
BC = os.environ["LK_T_BC"] == "1"

@lk.jit(boundscheck=BC)
def pick(a, i):
    return a[i] * 2

a = np.arange(5.0)
i = int(os.environ["LK_T_I"])
try:
    r = pick(a, i)
except IndexError as e:
    r = "IndexError"
print(json.dumps({"r": r, "info": pick.cache_info()}))
"""


def test_boundscheck_is_in_the_key(tmp_path):
    script = write(tmp_path, "bounds.py", BOUNDS)
    cache = tmp_path / "cache"
    assert run(script, cache, {"LK_T_BC": "0", "LK_T_I": "2"})["r"] == 4.0
    out = run(script, cache, {"LK_T_BC": "1", "LK_T_I": "7"})
    assert out["r"] == "IndexError" and out["info"]["misses"] == 1
    assert len(entries(cache)) == 2


OPENMP = PRELUDE + """\
@lk.jit(backend="openmp")
def work(a, b):
    out = np.empty(a.shape[0], np.int64)
    s = 0
    for i in lk.prange(a.shape[0]):
        out[i] = a[i] * b[i] + i
        s += a[i] - b[i]
    return out.sum() + (a * b).sum() + s

a = np.arange(100003, dtype=np.int64) % 97
b = np.arange(100003, dtype=np.int64) % 89
ref = int(work.py_func(a, b))
results = []
for threads in (1, 3, os.cpu_count()):
    for threshold in (0, 1000, 10**18):
        lk.set_num_threads(threads)
        lk.set_parallel_threshold(threshold)
        results.append(int(work(a, b)) == ref)
print(json.dumps({"ok": results, "info": work.cache_info()}))
"""


def test_cached_openmp_entry_right_under_any_threads_and_threshold(tmp_path):
    ok, why = lk._lorikeet.backend_available("openmp"), ""
    if ok is not True:
        pytest.skip(ok[1])
    script = write(tmp_path, "omp.py", OPENMP)
    cache = tmp_path / "cache"
    first = run(script, cache, {"LORIKEET_NUM_THREADS": "2", "LORIKEET_PARALLEL_THRESHOLD": "0"})
    assert first["info"]["compiles"] == 1 and all(first["ok"])
    for env in ({"LORIKEET_NUM_THREADS": "1"}, {"LORIKEET_PARALLEL_THRESHOLD": "1000000000000"}):
        out = run(script, cache, env)
        assert out["info"] == {"hits": 1, "misses": 0, "compiles": 0}
        assert all(out["ok"]) and len(out["ok"]) == 9


# ---- clashes between entries ----

# cpu: the cache holds cpu and openmp code, and a gpu reduction sums in another order than CPython's loop
FUNCS = """\
import numpy as np
import lorikeet as lk

@lk.jit(backend="cpu")
def f(a):
    return (a * 2.0).sum()

@lk.jit(backend="cpu")
def g(a):
    return (a + 1.0).max()

@lk.jit(backend="cpu")
def h(a):
    return np.sqrt(a * a).sum()  # exact, as f and g: NumPy sums in its own order
"""

ORDER = PRELUDE + """\
import funcs
a = np.arange(1.0, 50.0)
out = {}
for name in sys.argv[1]:
    fn = getattr(funcs, name)
    out[name] = [float(fn(a)), float(fn.py_func(a)), fn.cache_info()]
# the same function decorated again, and called on another backend too: one process, no duplicate symbols
again = lk.jit(funcs.f.py_func)
out["again"] = [float(again(a)), float(again(a, _backend="openmp")), float(funcs.f.py_func(a))]
print(json.dumps(out))
"""


def test_entries_compiled_in_any_order_load_together(tmp_path):
    write(tmp_path, "funcs.py", FUNCS)
    script = write(tmp_path, "order.py", ORDER)
    cache_a, cache_b, cache_c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    a = run(script, cache_a, args=["fg"])
    b = run(script, cache_b, args=["gf"])
    for out in (a, b):
        for name in "fg":
            assert out[name][0] == out[name][1] and out[name][2]["compiles"] == 1
        assert out["again"][0] == out["again"][2] and out["again"][1] == out["again"][2]
    # C gets f's entry from A (compiled first there) and g's from B (compiled first there)
    key = {name: next(line.split("key=")[1].split()[0] for line in log if f"fn=funcs.{name} " in line)
           for name, log in (("f", a["log"]), ("g", b["log"]))}
    for name, src in (("f", cache_a), ("g", cache_b)):
        for path in entries(src):
            if os.path.basename(path).startswith(key[name]):
                dest = cache_c / os.path.relpath(path, src)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(path, dest)
    c = run(script, cache_c, args=["fgh"])
    assert c["f"][2]["hits"] == 1 and c["g"][2]["hits"] == 1 and c["h"][2]["compiles"] == 1
    for name in "fgh":
        assert c[name][0] == c[name][1]
    assert c["again"][0] == c["again"][2] and c["again"][1] == c["again"][2]


FAILS = PRELUDE + """\
@lk.jit
def bad(a):
    return a + "text"

try:
    bad(np.arange(3.0))
    r = "compiled"
except lk.CompileError as e:
    r = str(e).splitlines()[0]
print(json.dumps({"r": r, "info": bad.cache_info()}))
"""


def test_a_failed_compilation_is_never_cached(tmp_path):
    script = write(tmp_path, "fails.py", FAILS)
    cache = tmp_path / "cache"
    first = run(script, cache)
    assert first["r"] != "compiled"
    assert entries(cache) == []
    assert run(script, cache)["r"] == first["r"]
    assert entries(cache) == []


# ---- the key itself (in this process) ----

def kernel(a, b):
    return np.sqrt(a * a + b * b).sum()


SIG = ["array(float64, 1d, C)", "array(float64, 1d, C)"]


def digest(d, sig=SIG, **overrides):
    import hashlib

    return hashlib.sha256(_key.preimage(d, sig, overrides)).hexdigest()


def test_each_toolchain_input_changes_the_key():
    d = lk.jit(kernel, backend="cpu")
    tc = _key.toolchain("cpu", False)
    feature = next(f for f in tc["features"].split(",") if f.startswith("+"))
    changed = {
        "build": {"build": "0" * 40},
        "lorikeet": {"lorikeet": tc["lorikeet"] + ".1"},
        "llvm": {"llvm": "16.0.7"},
        "cpu": {"cpu": "x86-64-v3"},
        "feature": {"features": tc["features"].replace(feature, "-" + feature[1:], 1)},
        "numpy": {"numpy": str(int(tc["numpy"]) + 1)},
        "python": {"python": tc["python"] + "0"},  # another Python than this one, whichever it is
        "vecmath": {"vecmath": "0"},
    }
    keys = {name: digest(d, **o) for name, o in changed.items()}
    keys["base"] = digest(d)
    assert len(set(keys.values())) == len(keys)
    assert digest(d) == keys["base"]  # and it is a function of its inputs


def test_options_signature_and_backend_change_the_key():
    cpu = dict(backend="cpu")
    keys = {
        digest(lk.jit(kernel, **cpu)),
        digest(lk.jit(kernel, boundscheck=False, **cpu)),
        digest(lk.jit(kernel, fastmath=True, **cpu)),
        digest(lk.jit(kernel, **cpu), ["array(float32, 1d, C)", "array(float64, 1d, C)"]),
        digest(lk.jit(kernel, **cpu), ["array(float64, 1d, A)", "array(float64, 1d, C)"]),
        digest(lk.jit(kernel, **cpu), ["array(float64, 1d, C, readonly)", "array(float64, 1d, C)"]),
    }
    if lk._lorikeet.backend_available("openmp") is True:
        keys.add(digest(lk.jit(kernel, backend="openmp")))
        assert len(keys) == 7
    else:
        assert len(keys) == 6


def test_the_preimage_holds_no_addresses_and_names_every_callee():
    d = lk.jit(kernel)
    text = _key.preimage(d, SIG).decode()
    assert " at 0x" not in text and hex(id(kernel)) not in text
    assert "env np module numpy" in text
    assert __file__ not in text  # nor where the function sits (an edit above it, a moved package: still a hit)

    @lk.jit
    def outer(a, b):
        return inner(a, b) + inner(b, a)

    @lk.jit
    def inner(a, b):
        return kernel(a, b) * FACTOR

    text = _key.preimage(outer, SIG).decode()
    assert "function #1 test_cache.test_the_preimage_holds_no_addresses_and_names_every_callee.<locals>.inner" in text
    assert "function #2 test_cache.kernel" in text
    assert f"env FACTOR const float {FACTOR.hex()}" in text


FACTOR = 1.5


def test_the_kernel_images_key_changes_with_the_architecture_nvrtc_and_build(monkeypatch):
    """The key of an NVRTC image (lorikeet/_images.py) is made from runtime/nvrtc.c's memo key: the CUDA source
    without comments, then NVRTC's version, options and target; test_cache_gpu.py shows it end to end."""
    import hashlib

    from lorikeet import _images

    src = b'extern "C" __global__ void lk_k0(long long n) {}\n'

    def key(arch="sm_90", version=13000, options="--std=c++17 --fmad=false "):
        return src + f"\nnvrtc {version}: --gpu-architecture={arch} {options}".encode()

    def digest_of(k):
        return hashlib.sha256(_images.preimage(k)).hexdigest()

    variants = [key(), key("sm_80"), key("compute_90"), key(version=12080), key(version=13010),
                key(options="--std=c++17 --fmad=true --use_fast_math")]
    assert len({digest_of(k) for k in variants}) == len(variants)
    assert _images.target(key()) == ("13.0", "sm_90", False)
    assert _images.target(key("compute_90", 12080)) == ("12.8", "compute_90", True)
    assert len({_images.generation(k) for k in variants[:4]}) == 4  # arch, PTX and version: other folders
    base = digest_of(key())
    monkeypatch.setattr(_images, "_lorikeet_id", (lk.__version__, "0" * 40))  # another build of lorikeet
    assert digest_of(key()) != base
    assert _images.target(b"no tail") is None


_gpu_ok = lk._lorikeet.backend_available("gpu")


@pytest.mark.skipif(_gpu_ok is not True, reason=f"no usable GPU: {_gpu_ok if _gpu_ok is True else _gpu_ok[1]}")
def test_each_gpu_toolchain_input_changes_the_key():
    d = lk.jit(kernel, backend="gpu")
    tc = _key.toolchain("gpu", False)
    assert tc["backend"] == "gpu" and tc["gpu"].startswith("sm_")
    assert tc["nvrtc"] == str(lk._lorikeet._nvrtc_status()[0])
    changed = {
        "gpu": {"gpu": "sm_" + str(int(tc["gpu"][3:]) + 10)},
        "nvrtc": {"nvrtc": str(int(tc["nvrtc"]) - 10)},
        "driver": {"driver": str(int(tc["driver"]) + 10)},
        "llvm": {"llvm": "16.0.7"},
        "build": {"build": "0" * 40},
    }
    keys = {name: digest(d, **o) for name, o in changed.items()}
    keys["base"] = digest(d)
    keys["cpu"] = digest(lk.jit(kernel, backend="cpu"))
    assert len(set(keys.values())) == len(keys)


# ---- positions: the key holds the source, not where it sits ----

PLACED = PRELUDE + """\
import traceback

def at(a, i):
    b = a + 1.0
    return b[i]                                       # the IndexError is raised here

@lk.jit
def pick(a, i):
    return at(a, i) * 2.0

def where(fn, *args):
    \"\"\"(file, line) that the IndexError of fn(*args) names: CPython's innermost frame, lorikeet's message.\"\"\"
    try:
        fn(*args)
    except IndexError as e:
        if fn is pick:
            line = [s for s in str(e).splitlines() if s.strip().startswith("File ")][0]
            return [line.split('"')[1], int(line.rsplit(" ", 1)[1])]
        frame = traceback.extract_tb(e.__traceback__)[-1]
        return [frame.filename, frame.lineno]

a = np.arange(5.0)
print(json.dumps({"r": pick(a, 3), "ref": pick.py_func(a, 3), "where": where(pick, a, 9),
                  "ref_where": where(pick.py_func, a, 9), "info": pick.cache_info()}))
"""


def test_code_moved_to_other_lines_and_folder_hits_and_names_its_new_place(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = write(tmp_path / "a", "placed.py", PLACED)
    moved = write(tmp_path / "b", "placed.py", "\n".join(["# an edit above"] * 10) + "\n" + PLACED)
    cache = tmp_path / "cache"
    out = run(first, cache)
    assert out["info"] == {"hits": 0, "misses": 1, "compiles": 1}
    assert out["where"] == out["ref_where"] and out["where"][0] == first
    again = run(moved, cache)
    assert again["info"] == {"hits": 1, "misses": 0, "compiles": 0}, again["log"]
    assert again["r"] == again["ref"]
    # the error of the loaded code names the file and line where this process has the function
    assert again["where"] == again["ref_where"] and again["where"] == [moved, out["where"][1] + 10]
    assert len(entries(cache)) == 1


# ---- a portable level's entry serves a CPU that has its features ----

PORTABLE = PRELUDE + """\
@lk.jit
def hyp(a):
    return np.sqrt(a * a + 1.0)                       # correctly rounded at any vector width

@lk.jit
def total(a):
    return (a * 2.0).sum()                            # exact: small integers

a = np.arange(1000.0)
print(json.dumps({"r": [hyp(a).tolist(), total(a)], "ref": [np.sqrt(a * a + 1.0).tolist(), (a * 2.0).sum()],
                  "info": [hyp.cache_info(), total.cache_info()]}))
"""


def test_an_image_compiled_for_a_portable_level_serves_this_cpu(tmp_path):
    script = write(tmp_path, "portable.py", PORTABLE)
    usable = _key.portable_levels(_key.toolchain("cpu", False))
    if not usable:
        pytest.skip("this machine runs no portable x86-64 level's code in place of its own (or is not x86-64)")
    for level in ("x86-64-v2", "x86-64-v3", "x86-64-v4"):
        image, home = tmp_path / f"image-{level}", tmp_path / f"home-{level}"
        ok = level in usable or subprocess.run(
            [sys.executable, "-c", "import lorikeet as lk; lk.jit(lambda x: x)(1.0)"],
            env={**os.environ, "PYTHONPATH": PYSHIM, "LORIKEET_CPU": level, "LORIKEET_CACHE": "0"}).returncode == 0
        if not ok:
            continue  # this machine cannot compile for the level at all
        built = run(script, image, {"LORIKEET_CPU": level})  # the image's build, on "another machine"
        assert [i["compiles"] for i in built["info"]] == [1, 1]
        os.chmod(image, 0o500)
        try:
            out = run(script, home, {"LORIKEET_CACHE_PATH": str(image)})
        finally:
            os.chmod(image, 0o700)
        assert out["r"] == out["ref"] == built["r"]
        if level in usable:
            assert [i["compiles"] for i in out["info"]] == [0, 0], out["log"]
            assert [line.split()[2] for line in out["log"]] == [f"hit({level})"] * 2
            assert not entries(home)  # read from the image, nothing written
        else:  # its vector math calls variants this process's JIT does not resolve: compiled here instead
            assert [i["compiles"] for i in out["info"]] == [1, 1], out["log"]
    # the exact CPU's entry, when there is one, comes first
    home = tmp_path / "home"
    run(script, home)
    again = run(script, home, {"LORIKEET_CACHE_PATH": str(tmp_path / f"image-{usable[0]}")})
    assert [line.split()[2] for line in again["log"]] == ["hit", "hit"]


# ---- python -m lorikeet cache list / prune / why ----

LISTED = PRELUDE + """\
K = float(os.environ.get("LK_T_K", "2.0"))

@lk.jit
def f(a):
    return (a * K).sum()

sigs = os.environ.get("LK_T_SIGS", "float64,int64").split(",")
r = [float(f(np.arange(10, dtype=s))) for s in sigs]
print(json.dumps({"r": r, "ref": [float(f.py_func(np.arange(10, dtype=s))) for s in sigs], "info": f.cache_info()}))
"""


def cli(cache, *args, env=None, cwd=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("LORIKEET_")}
    e.update({"PYTHONPATH": PYSHIM, "LORIKEET_CACHE_DIR": str(cache), "PYTHONDONTWRITEBYTECODE": "1"}, **(env or {}))
    p = subprocess.run([sys.executable, "-m", "lorikeet", "cache", *args], env=e, cwd=cwd, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


def _stale_copies(cache, n):
    """n copies of a real entry filed under generations of another lorikeet build or LLVM, newer than the rest."""
    src = entries(cache)[0]
    gen = os.path.basename(os.path.dirname(os.path.dirname(src)))
    others = [gen.replace("-llvm", "-llvm0.0.1-x", 1)] + [gen.rsplit("+", 1)[0] + f"+{k:012x}" for k in range(1, n)]
    made = []
    for k, other in enumerate(others):
        digest = f"{k:02x}" * 32
        path = os.path.join(cache, "v1", other, digest[:2], digest + ".lkc")
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        shutil.copyfile(src, path)
        made.append(path)
    return made


def test_cache_list_shows_each_entry(tmp_path):
    script, cache = write(tmp_path, "listed.py", LISTED), tmp_path / "cache"
    run(script, cache)
    out = cli(cache, "list")
    import re

    rows = [re.fullmatch(r"(.*\)\))\s+(\w+)\s+([\d.]+ \w+)\s+(\S+ \S+)\s+(\S+)", line).groups()
            for line in out.splitlines()[1:-1]]
    assert sorted(r[0] for r in rows) == ["__main__.f(array(float64, 1d, C))", "__main__.f(array(int64, 1d, C))"]
    sizes = sorted(os.path.getsize(p) for p in entries(cache))
    assert sorted(float(r[2].split()[0]) for r in rows) == [round(n / 1024, 1) for n in sizes]
    assert all(r[1] == "cpu" and r[3].startswith(time.strftime("%Y-%m-%d")) and r[4].startswith("cpu-")
               for r in rows), out
    assert out.splitlines()[-1].startswith("2 entries")


def test_cache_prune_removes_other_builds_and_dead_writers_files(tmp_path):
    script, cache = write(tmp_path, "listed.py", LISTED), tmp_path / "cache"
    run(script, cache)
    stale = _stale_copies(cache, 3)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    tmp = os.path.join(cache, "v1", "tmp")
    orphan, live = (os.path.join(tmp, f"{'ab' * 8}.{pid}.0a0b0c.tmp") for pid in (dead.stdout.strip(), os.getpid()))
    for path in (orphan, live):
        with open(path, "wb") as f:
            f.write(b"half an entry")
        os.utime(path, (time.time() - 120, time.time() - 120))
    assert "(stale)" in cli(cache, "list")
    out = cli(cache, "prune")
    assert "removed 3 entries" in out and "1 orphaned temporary file " in out, out
    assert not any(os.path.exists(p) for p in stale) and not os.path.exists(orphan) and os.path.exists(live)
    assert len(entries(cache)) == 2
    assert run(script, cache)["info"] == {"hits": 2, "misses": 0, "compiles": 0}


def test_eviction_takes_other_builds_entries_first(tmp_path):
    script, cache = write(tmp_path, "listed.py", LISTED), tmp_path / "cache"
    run(script, cache)
    mine = entries(cache)
    size = sum(os.path.getsize(p) for p in mine)
    stale = _stale_copies(cache, 4)  # newer than ours: least-recently-used order alone would remove ours
    os.unlink(os.path.join(cache, "v1", ".prune"))  # the next write runs an eviction pass
    cap = int(size * 1.5 / 0.8) + 2048  # ours and one more entry fit in 80% of it, the stale ones do not
    out = run(script, cache, {"LK_T_SIGS": "float32", "LORIKEET_CACHE_SIZE": str(cap)})
    assert out["info"]["compiles"] == 1 and any("evict" in line for line in out["log"]), out["log"]
    assert not any(os.path.exists(p) for p in stale)
    assert all(os.path.exists(p) for p in mine) and len(entries(cache)) == 3


def test_cache_why_names_the_input_that_differs(tmp_path):
    script, cache = write(tmp_path, "listed.py", LISTED), tmp_path / "cache"
    run(script, cache, {"LK_T_SIGS": "float64"})
    out = cli(cache, "why", f"{script}:f", env={"LK_T_SIGS": "float64", "LK_T_K": "3.0"}, cwd=tmp_path)
    assert "__main__.f(array(float64, 1d, C)) [cpu]: miss (absent)" in out, out
    assert f"env K: const float {2.0.hex()} in the entry, const float {3.0.hex()} now" in out, out
    assert "differs in 1 input:" in out
    out = cli(cache, "why", f"{script}:f", env={"LK_T_SIGS": "float64", "LORIKEET_CPU": "x86-64"}, cwd=tmp_path)
    assert "cpu: " in out and "x86-64 now" in out, out
    assert len(entries(cache)) == 1  # why only reads
    out = cli(cache, "why", f"{script}:f", env={"LK_T_SIGS": "float64"}, cwd=tmp_path)
    assert "its last lookup hit" in out, out


# ---- LORIKEET_CACHE_VERIFY=1: a hit is compiled too and compared ----

VERIFIED = PRELUDE + """\
import warnings

@lk.jit
def f(a, i):
    return a[i] * 2.0

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    r = [f(np.arange(5.0), 3), f(np.arange(5.0, dtype=np.float32), 3), f(np.arange(5.0), 4)]
print(json.dumps({"r": [float(x) for x in r], "ref": [f.py_func(np.arange(5.0), 3) * 1.0] * 2 + [8.0],
                  "warnings": [f"{w.category.__name__}: {w.message}" for w in caught], "info": f.cache_info()}))
"""


def _plant_difference(path, old, new):
    """Rewrites the entry at path with old replaced by new (same length) in its object: a valid entry whose code
    is not what its key's compilation makes."""
    from lorikeet import _cache

    with open(path, "rb") as f:
        records, why = _cache.decode(f.read(), None)
    assert records is not None, why
    preimage = records.pop("")
    assert old in records["obj"] and len(old) == len(new)
    records["obj"] = records["obj"].replace(old, new)
    with open(path, "wb") as f:
        f.write(_cache.encode(preimage, records))


def test_verify_mode_finds_code_that_differs_from_its_entry(tmp_path):
    script, cache = write(tmp_path, "verified.py", VERIFIED), tmp_path / "cache"
    first = run(script, cache)
    assert first["r"] == first["ref"] and first["info"]["compiles"] == 2
    clean = run(script, cache, {"LORIKEET_CACHE_VERIFY": "1"})
    assert clean["info"] == {"hits": 2, "misses": 0, "compiles": 0} and clean["warnings"] == []
    for path in entries(cache):  # the file its errors would name, one letter changed: the code still runs
        _plant_difference(path, b"verified.py", b"verifiex.py")
    plain = run(script, cache)
    assert plain["info"]["hits"] == 2 and plain["warnings"] == [] and plain["r"] == first["r"]
    out = run(script, cache, {"LORIKEET_CACHE_VERIFY": "1"})
    assert out["info"]["hits"] == 2 and out["r"] == first["r"]
    assert len(out["warnings"]) == 1, out["warnings"]  # once per function, though both signatures differ
    w = out["warnings"][0]
    assert w.startswith("CacheVerifyWarning: ") and "__main__.f(array(float64, 1d, C), int)" in w, w
    assert "differs from the cached one" in w
