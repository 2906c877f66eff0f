"""The on-disk cache for the gpu backend (issue 11): a new process takes the kernels' images an earlier one
compiled from the cache instead of running NVRTC again, and takes nothing damaged, stale or made for another
architecture or NVRTC. Each program runs in fresh processes against a temporary LORIKEET_CACHE_DIR. NVRTC runs
without a GPU: these tests go through the test entry point _lorikeet._nvrtc_compile(..., cache=True), on the CUDA C
that f.inspect_cuda gives, as a gpu compilation does."""
import json
import os
import shutil
import struct
import subprocess
import sys
import textwrap

import pytest

import lorikeet as lk
from lorikeet import _cache, _images

HERE = os.path.dirname(os.path.abspath(__file__))
PYSHIM = os.path.join(os.path.dirname(HERE), "pyshim")

try:
    NVRTC_VERSION, NVRTC_WHY = lk._lorikeet._nvrtc_status()
except Exception as e:  # pragma: no cover
    NVRTC_VERSION, NVRTC_WHY = 0, str(e)
needs_nvrtc = pytest.mark.skipif(not NVRTC_VERSION, reason=f"no NVRTC: {NVRTC_WHY}")
CC = shutil.which("cc") or shutil.which("gcc")


def write(folder, name, text):
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write(textwrap.dedent(text))
    return path


def run(script, cache, env=None, args=()):
    """Runs script in a fresh process with cache as LORIKEET_CACHE_DIR; its last stdout line, as JSON, with the
    cache's log lines (LORIKEET_CACHE_LOG=1) under 'log'."""
    e = {k: v for k, v in os.environ.items() if not k.startswith(("LORIKEET_", "FAKE_"))}
    e.update({"PYTHONPATH": PYSHIM, "LORIKEET_CACHE_DIR": str(cache), "PYTHONDONTWRITEBYTECODE": "1",
              "LORIKEET_CACHE_LOG": "1"})
    e.update(env or {})
    p = subprocess.run([sys.executable, script, *map(str, args)], env=e, cwd=os.path.dirname(script),
                       capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    out["log"] = [line for line in p.stderr.splitlines() if line.startswith("lorikeet cache:")]
    return out


def entries(cache, generation_prefix=""):
    """{generation: [entry paths]} of the cache's entries whose generation starts with generation_prefix."""
    found = {}
    for root, _, files in os.walk(cache):
        for n in files:
            if n.endswith(".lkc") and len(n) == 68:
                gen = os.path.basename(os.path.dirname(root))
                if gen.startswith(generation_prefix):
                    found.setdefault(gen, []).append(os.path.join(root, n))
    return found


def one_entry(cache, prefix):
    found = entries(cache, prefix)
    assert len(found) == 1 and len(next(iter(found.values()))) == 1, found
    return next(iter(found.values()))[0]


def stored_preimage(path):
    with open(path, "rb") as f:
        data = f.read()
    magic, version, n = struct.unpack_from("<8sIQ", data)
    assert magic == _cache.MAGIC and version == _cache.FORMAT_VERSION
    return data[struct.calcsize("<8sIQ"):struct.calcsize("<8sIQ") + n]


def flip_byte(path, at):
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        data[at] ^= 0x40
        f.seek(0)
        f.write(data)


# ---- the layer of kernel images (NVRTC only) ----

IMAGES = """\
import hashlib, json, sys
import numpy as np
import lorikeet as lk

def first(x):
    return np.sqrt(x * x + 1.25)

def second(y):  # another function at another line: its kernels are the same code (they differ in comments)

    return np.sqrt(y * y + 1.25)

fn = {"first": first, "second": second}[sys.argv[1]]
cc, cache = int(sys.argv[2]), sys.argv[3] == "1"
src = lk.jit(fn).inspect_cuda(np.arange(8.0))
image, ptx = lk._lorikeet._nvrtc_compile(src, cc, "k.cu", False, cache)
s = lk.runtime.stats()
print(json.dumps({"nvrtc": s["compiles"], "disk": s["disk_images"], "ptx": ptx,
                  "image": hashlib.sha256(image).hexdigest(), "elf": image[:4] == b"\\x7fELF"}))
"""


@pytest.fixture
def images(tmp_path):
    return write(tmp_path, "images.py", IMAGES), tmp_path / "cache"


def compiled(out):
    assert (out["nvrtc"], out["disk"]) == (1, 0), out
    return out


def from_disk(out):
    assert (out["nvrtc"], out["disk"]) == (0, 1), out
    return out


@needs_nvrtc
def test_a_new_process_takes_kernel_images_from_disk_without_nvrtc(images):
    script, cache = images
    cold = compiled(run(script, cache, args=("first", 90, 1)))
    assert cold["elf"] and not cold["ptx"]
    assert any("image miss(absent)" in line for line in cold["log"]) and any("image write" in l for l in cold["log"])
    path = one_entry(cache, f"nvrtc{NVRTC_VERSION // 1000}.{NVRTC_VERSION % 1000 // 10}-sm_90-")
    warm = from_disk(run(script, cache, args=("first", 90, 1)))
    assert warm["image"] == cold["image"]
    assert any(line.split()[2:4] == ["image", "hit"] for line in warm["log"]), warm["log"]
    # kernels that are the same code in another function (comments stripped from the key) are the same entry
    assert from_disk(run(script, cache, args=("second", 90, 1)))["image"] == cold["image"]
    assert sum(map(len, entries(cache).values())) == 1
    text = stored_preimage(path).decode()
    assert f"nvrtc {NVRTC_VERSION}: --gpu-architecture=sm_90 " in text and "/*" not in text
    assert f"build {lk._lorikeet.build_id() or 'none'}" in text


@needs_nvrtc
def test_ptx_for_an_architecture_newer_than_nvrtc_knows_is_kept_too(images):
    script, cache = images
    cold = compiled(run(script, cache, args=("first", 99, 1)))
    assert cold["ptx"] and not cold["elf"]
    assert one_entry(cache, "nvrtc").split(os.sep)[-3].split("-")[1].startswith("compute_")
    assert from_disk(run(script, cache, args=("first", 99, 1)))["image"] == cold["image"]


def _plant_other_kind(path):
    """An entry with a valid checksum filed under the right key whose image is not a cubin (a writer's bug)."""
    pre = stored_preimage(path)
    meta = {"format": _images.FORMAT, "kind": _images.KIND, "ptx": False, "target": "sm_90", "nvrtc": "x"}
    data = _cache.encode(pre, {"image": b"not a cubin, but long enough", "meta": json.dumps(meta).encode()})
    with open(path, "wb") as f:
        f.write(data)


DAMAGE = {
    "a flipped byte": lambda p: flip_byte(p, os.path.getsize(p) // 2),
    "the checksum's last byte": lambda p: flip_byte(p, os.path.getsize(p) - 1),
    "cut in half": lambda p: os.truncate(p, os.path.getsize(p) // 2),
    "empty": lambda p: os.truncate(p, 0),
    "an image that is no cubin": _plant_other_kind,
}


@needs_nvrtc
@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_image_entry_is_a_miss_and_is_written_again(images, damage):
    script, cache = images
    good = compiled(run(script, cache, args=("first", 90, 1)))
    path = one_entry(cache, "nvrtc")
    DAMAGE[damage](path)
    again = compiled(run(script, cache, args=("first", 90, 1)))  # NVRTC ran: nothing damaged was used
    assert again["image"] == good["image"]
    assert one_entry(cache, "nvrtc") == path
    assert from_disk(run(script, cache, args=("first", 90, 1)))["image"] == good["image"]


FAKE_NVRTC = r"""
/* NVRTC as found at LORIKEET_REAL_NVRTC, reporting the version FAKE_NVRTC_VERSION ("12.8") */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
static void *real(const char *name)
{
    static void *h;
    if (!h) h = dlopen(getenv("LORIKEET_REAL_NVRTC"), RTLD_NOW | RTLD_LOCAL);
    return h ? dlsym(h, name) : NULL;
}
#define FORWARD(ret, name, params, args) \
    ret name params { ret (*f) params = (ret (*) params)real(#name); return f args; }
int nvrtcVersion(int *major, int *minor)
{
    const char *v = getenv("FAKE_NVRTC_VERSION");
    if (!v || sscanf(v, "%d.%d", major, minor) != 2) return ((int (*)(int *, int *))real("nvrtcVersion"))(major, minor);
    return 0;
}
FORWARD(const char *, nvrtcGetErrorString, (int r), (r))
FORWARD(int, nvrtcGetNumSupportedArchs, (int *n), (n))
FORWARD(int, nvrtcGetSupportedArchs, (int *a), (a))
FORWARD(int, nvrtcCreateProgram, (void **p, const char *s, const char *n, int k, const char *const *h,
                                  const char *const *i), (p, s, n, k, h, i))
FORWARD(int, nvrtcDestroyProgram, (void **p), (p))
FORWARD(int, nvrtcCompileProgram, (void *p, int n, const char *const *o), (p, n, o))
FORWARD(int, nvrtcGetPTXSize, (void *p, size_t *n), (p, n))
FORWARD(int, nvrtcGetPTX, (void *p, char *b), (p, b))
FORWARD(int, nvrtcGetCUBINSize, (void *p, size_t *n), (p, n))
FORWARD(int, nvrtcGetCUBIN, (void *p, char *b), (p, b))
FORWARD(int, nvrtcGetProgramLogSize, (void *p, size_t *n), (p, n))
FORWARD(int, nvrtcGetProgramLog, (void *p, char *b), (p, b))
"""


def build_library(folder, name, source, *libs):
    if CC is None:
        pytest.skip("no C compiler to build the stand-in library")
    os.makedirs(folder, exist_ok=True)
    c = os.path.join(folder, "stand_in.c")
    with open(c, "w") as f:
        f.write(source)
    out = os.path.join(folder, name)
    subprocess.run([CC, "-shared", "-fPIC", "-O1", "-o", out, c, *libs], check=True, capture_output=True)
    return out


def real_nvrtc():
    """The path of the NVRTC library this process loaded."""
    with open("/proc/self/maps") as f:
        for line in f:
            if "libnvrtc.so" in line:
                return line.split()[-1]
    pytest.skip("this process has not loaded NVRTC")


@needs_nvrtc
def test_another_architecture_or_nvrtc_version_is_a_miss(images, tmp_path):
    script, cache = images
    base = compiled(run(script, cache, args=("first", 90, 1)))
    assert compiled(run(script, cache, args=("first", 80, 1)))["image"] != base["image"]
    lk._lorikeet._nvrtc_compile("extern \"C\" __global__ void k() {}", 90)  # loads NVRTC here
    fake = build_library(tmp_path / "nvrtc", "libnvrtc.so.13", FAKE_NVRTC, "-ldl")
    other = {"LORIKEET_NVRTC": fake, "LORIKEET_REAL_NVRTC": real_nvrtc(), "FAKE_NVRTC_VERSION": "12.8"}
    compiled(run(script, cache, env=other, args=("first", 90, 1)))  # the same source and target, another NVRTC
    gens = sorted(entries(cache))
    assert len(gens) == 3 and [g.split("-")[:2] for g in gens] == [
        ["nvrtc12.8", "sm_90"], [f"nvrtc{NVRTC_VERSION // 1000}.{NVRTC_VERSION % 1000 // 10}", "sm_80"],
        [f"nvrtc{NVRTC_VERSION // 1000}.{NVRTC_VERSION % 1000 // 10}", "sm_90"]]
    assert from_disk(run(script, cache, env=other, args=("first", 90, 1)))["image"] == base["image"]
    assert from_disk(run(script, cache, args=("first", 90, 1)))["image"] == base["image"]


@needs_nvrtc
def test_images_are_not_kept_with_the_cache_off(images):
    script, cache = images
    for env in ({"LORIKEET_CACHE": "0"}, {"LORIKEET_CACHE": "0"}):
        compiled(run(script, cache, env=env, args=("first", 90, 1)))
    for _ in range(2):  # the compile asked for no cache (as a function with cache=False does)
        compiled(run(script, cache, args=("first", 90, 0)))
    assert entries(cache) == {}
