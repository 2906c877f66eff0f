"""lorikeet as a package: `pip install .` and `pip install -e .` (pyproject.toml, setup.py) build the C extension and
install `lorikeet` into a fresh environment, where it imports and computes from any folder; a build that lacks
LLVM 16 says what is missing; `python -m lorikeet info` reports versions, backends, CPU, GPU and cache.

The install runs once, in the cpu pass of the suite (it builds the extension: about 20 to 40 s on a 2-core
machine, then a few seconds for the editable install, which reuses the objects). It needs no network: the fresh
venv sees this interpreter's site-packages (NumPy, setuptools, wheel) through a .pth file and pip runs with
--no-build-isolation --no-index."""
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap

import numpy as np
import pytest

import lorikeet as lk

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BACKENDS = ("cpu", "openmp", "gpu")

SCRIPT = textwrap.dedent("""
    import os, sys
    import numpy as np
    import lorikeet as lk

    @lk.jit
    def damped_norm(a, b, c):
        return np.sqrt(a * a + b * b) * np.exp(-c)

    @lk.jit
    def total(x):
        s = 0.0
        for i in range(x.shape[0]):
            s += x[i] * x[i]
        return s

    rng = np.random.default_rng(1)
    a, b, c = rng.random(1000), rng.random(1000), rng.random(1000)
    np.testing.assert_allclose(damped_norm(a, b, c), np.sqrt(a * a + b * b) * np.exp(-c), rtol=1e-14)
    np.testing.assert_allclose(total(a), float((a * a).sum()), rtol=1e-12)
    print(os.path.realpath(lk.__file__))
    print(os.path.realpath(lk._lorikeet.__file__))
""")


def clean_env(**extra):
    """The environment of a process that finds lorikeet only where it is installed (no PYTHONPATH=pyshim)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(extra)
    return env


def run(cmd, cwd, **extra):
    r = subprocess.run(cmd, cwd=cwd, env=clean_env(**extra), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"{' '.join(cmd)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
    return r.stdout


def check_info(text, expect_backend="cpu"):
    """The lines `python -m lorikeet info` must have, checked against what this process finds itself."""
    lines = text.splitlines()
    field = {ln.split(":", 1)[0]: ln.split(":", 1)[1].strip() for ln in lines if not ln.startswith(" ")}
    assert field["lorikeet"].startswith(lk.__version__)
    assert field["Python"].startswith(sys.version.split()[0])
    assert field["NumPy"] == np.__version__
    assert field["LLVM"].startswith("16.")
    assert field["default backend"].startswith(expect_backend)
    for name in BACKENDS:
        row = [ln.split() for ln in lines if ln.startswith("    ") and ln.split()[0] == name]
        assert len(row) == 1, f"no line for backend {name}:\n{text}"
        ok = lk._lorikeet.backend_available(name)
        if ok is True:
            assert row[0][1].rstrip(",") == "available"
        else:
            assert row[0][1:3] == ["not", "available:"] and ok[1] in text
    cpu = dict(kv.split("=", 1) for kv in lk._lorikeet.key_extras("cpu", False).split(";") if "=" in kv)
    assert field["CPU"].startswith(cpu["cpu"])
    for feature in cpu["features"].split(","):
        if feature.startswith("+"):
            assert f" {feature[1:]} " in f" {' '.join(text.split())} ", f"feature {feature} not listed"
    gpu = lk._lorikeet._gpu_info()
    if gpu is None:
        assert field["GPU"].startswith("none: ") and lk.gpu_available()[1] in field["GPU"]
    else:
        assert field["GPU"].startswith(gpu["name"])
    assert "cuBLAS" in field and "NVRTC" in field
    assert os.environ["LORIKEET_CACHE_DIR"] in field["cache"]


def test_info_in_this_environment():
    out = subprocess.run([sys.executable, "-m", "lorikeet", "info"], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=os.path.join(REPO, "pyshim")))
    assert out.returncode == 0, out.stderr
    check_info(out.stdout, lk.get_backend())


def load_setup_py():
    spec = importlib.util.spec_from_file_location("lorikeet_setup", os.path.join(REPO, "setup.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # setup() runs only as __main__: this defines the build's pieces
    return mod


def test_missing_llvm_is_named(monkeypatch):
    setup_py = load_setup_py()
    monkeypatch.delenv("LLVM_CFLAGS", raising=False)
    monkeypatch.delenv("LLVM_LIBS", raising=False)
    if os.path.exists(setup_py.LLVM_HEADER):  # a machine that builds with LLVM_CFLAGS may have them elsewhere
        assert setup_py.missing_for_build() == []  # this machine has what the build needs
    monkeypatch.setattr(setup_py, "LLVM_HEADER", "/nonexistent/llvm-c-16/llvm-c/Core.h")
    monkeypatch.setattr(setup_py, "LLVM_LIBRARY", "libLLVM-16-nonexistent.so.1")
    missing = setup_py.missing_for_build()
    assert len(missing) == 2
    assert "/nonexistent/llvm-c-16/llvm-c/Core.h" in missing[0] and "llvm-16-dev" in missing[0]
    assert "libLLVM-16-nonexistent.so.1" in missing[1] and "llvm-16-dev" in missing[1]
    ext = setup_py.MakeBuildExt.__new__(setup_py.MakeBuildExt)
    with pytest.raises(setup_py.BuildError, match="llvm-16-dev"):
        ext.build_extension(None)  # before anything is compiled


@pytest.mark.skipif(os.environ.get("LORIKEET_BACKEND", "cpu") != "cpu",
                    reason="the install is built and checked once, in the cpu pass")
def test_pip_install_into_fresh_venv(tmp_path):
    for need in ("setuptools", "wheel"):
        assert importlib.util.find_spec(need), f"{need} is missing from {sys.prefix}: run scripts/setup.sh"
    src, venv, elsewhere = tmp_path / "src", tmp_path / "venv", tmp_path / "elsewhere"
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, check=True,
                           capture_output=True).stdout.decode().split("\0")
    for name in filter(None, files):
        if os.path.isfile(os.path.join(REPO, name)):
            os.makedirs(src / os.path.dirname(name), exist_ok=True)
            shutil.copy2(os.path.join(REPO, name), src / name)
    assert not list((src / "pyshim" / "lorikeet").glob("_lorikeet*.so"))  # the copy has nothing built
    elsewhere.mkdir()
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    site = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], elsewhere).strip()
    with open(os.path.join(site, "outer.pth"), "w") as f:
        f.write(sysconfig.get_paths()["purelib"] + "\n")
    pip = [python, "-m", "pip", "install", "--no-build-isolation", "--no-index", "--disable-pip-version-check", "-q"]
    script = elsewhere / "use_lorikeet.py"
    script.write_text(SCRIPT)

    run(pip + [str(src)], elsewhere)
    where, ext = run([python, str(script)], elsewhere).split()
    assert where == os.path.realpath(os.path.join(site, "lorikeet", "__init__.py"))
    assert os.path.dirname(ext) == os.path.dirname(where)
    check_info(run([python, "-m", "lorikeet", "info"], elsewhere))
    assert not list((src / "pyshim" / "lorikeet").glob("_lorikeet*.so"))  # built into the wheel, not in place

    run(pip + ["-e", str(src)], elsewhere)  # development: the package is the tree's, the library built in place
    where, ext = run([python, str(script)], elsewhere).split()
    assert where == os.path.realpath(src / "pyshim" / "lorikeet" / "__init__.py")
    assert os.path.dirname(ext) == str(os.path.realpath(src / "pyshim" / "lorikeet"))


def _tree_copy(dest):
    """The tree's files as git has them (tracked, and untracked ones not ignored) copied to dest: nothing built."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, check=True,
                           capture_output=True).stdout.decode().split("\0")
    names = [n for n in files if n and os.path.isfile(os.path.join(REPO, n))]
    for name in names:
        os.makedirs(dest / os.path.dirname(name), exist_ok=True)
        shutil.copy2(os.path.join(REPO, name), dest / name)
    return names


def test_the_source_archive_holds_what_the_build_needs(tmp_path):
    import fnmatch
    import tarfile

    if not importlib.util.find_spec("setuptools"):
        pytest.skip("setuptools is missing from this environment: run scripts/setup.sh")
    src, dist = tmp_path / "src", tmp_path / "dist"
    names = _tree_copy(src)
    build = importlib.util.find_spec("build")
    if build is not None and build.origin is not None:  # not the tree's build/ folder, a namespace package
        run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(dist)], src)
    else:
        run([sys.executable, "setup.py", "-q", "sdist", "--formats=gztar", "--dist-dir", str(dist)], src)
    (archive,) = dist.glob("lorikeet-*.tar.gz")
    with tarfile.open(archive) as tar:
        held = {m.name.split("/", 1)[1] for m in tar.getmembers() if m.isfile() and "/" in m.name}
    # the Makefile's SRC and HDR globs, over the tree's files
    src_globs = ["pyshim/*.c", "frontend/*.c", "typespec/*.c", "ir/*.c", "backends/*.c", "backends/llvm/*.c",
                 "backends/gpu/*.c", "runtime/*.c", "*/*.h", "backends/*/*.h"]
    makefile = open(os.path.join(REPO, "Makefile")).read()
    for pattern in src_globs:
        assert f"$(wildcard {pattern})" in makefile, f"the Makefile no longer globs {pattern}: update this test"
    sources = {n for n in names if any(fnmatch.fnmatch(n, p) and n.count("/") == p.count("/") for p in src_globs)}
    assert len([n for n in sources if n.endswith(".c")]) > 50
    needed = sources | {"Makefile", "setup.py", "pyproject.toml", "scripts/setup.sh", "scripts/check_layers.sh"} | \
        {n for n in names if fnmatch.fnmatch(n, "pyshim/lorikeet/*.py")}
    assert not needed - held, f"missing from {archive.name}: {sorted(needed - held)}"
    assert not [n for n in held if n.endswith((".o", ".so", ".pyc"))]  # nothing built travels
