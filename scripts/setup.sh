#!/usr/bin/env bash
# Installs what lorikeet needs on a fresh Debian/Ubuntu machine, and nothing that is already there:
# LLVM 16 headers and library, Python headers, a C compiler (apt-get, when root), and a local .venv
# with numpy, pytest, setuptools and wheel (tests/test_install.py installs lorikeet offline) and dask[distributed]
# (tests/test_workers.py runs a Dask cluster); numba, scipy and matplotlib too when LK_WITH_NUMBA=1, for the
# benchmarks.
# It is idempotent: a second run does no work and touches nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

need_pkgs=()
[ -f /usr/include/llvm-c-16/llvm-c/Core.h ] || need_pkgs+=(llvm-16-dev)
command -v cc >/dev/null 2>&1 || need_pkgs+=(gcc)
command -v make >/dev/null 2>&1 || need_pkgs+=(make)
ldconfig -p 2>/dev/null | grep -q 'libgomp.so.1 ' || need_pkgs+=(libgomp1)   # the openmp backend's runtime
PY=${PYTHON:-python3}
pyinc=$($PY -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
[ -f "$pyinc/Python.h" ] || need_pkgs+=(python3-dev)
$PY -c 'import venv, ensurepip' >/dev/null 2>&1 || need_pkgs+=(python3-venv)

if [ ${#need_pkgs[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "setup: installing Debian packages: ${need_pkgs[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
  else
    echo "setup: missing packages ${need_pkgs[*]}; run as root or install them with apt-get" >&2
    exit 1
  fi
fi

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  $PY -m venv .venv
fi
want="numpy pytest setuptools wheel"   # setuptools, wheel: tests/test_install.py builds offline
[ "${LK_WITH_NUMBA:-0}" = 1 ] && want="$want numba matplotlib scipy"   # scipy: numba's np.dot needs it
missing=()
for p in $want; do .venv/bin/python -c "import $p" >/dev/null 2>&1 || missing+=("$p"); done
.venv/bin/python -c "import dask.array, dask.distributed" >/dev/null 2>&1 || missing+=("dask[distributed]")
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: pip installing ${missing[*]} into .venv"
  .venv/bin/python -m pip install -q --disable-pip-version-check "${missing[@]}"
fi
