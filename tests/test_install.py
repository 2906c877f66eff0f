"""`python -m lorikeet info` reports versions, backends (and why one is not available), CPU, GPU and cache: each
line checked against what this process finds itself."""
import os
import subprocess
import sys

import numpy as np

import lorikeet as lk

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BACKENDS = ("cpu", "openmp", "gpu")


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
