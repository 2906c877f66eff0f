#!/usr/bin/env bash
# The test suite on a machine where lorikeet cannot be set up by scripts/setup.sh (no apt, no network), such as
# the GPU host: LLVM's headers come from .llvm-headers/ (a copy of /usr/include/llvm-c-16 and
# /usr/include/llvm-16/llvm/Config, carried beside the checkout), Python, NumPy and pytest are the machine's own.
# The cpu, openmp and narrow-CPU passes of `make test` run side by side (the machine has cores to spare); each
# pass's log goes to $1 (default /tmp). Exit status: 0 when every pass passed.
set -u
cd "$(dirname "$0")/.."
logs=${1:-/tmp}
PY=${PYTHON:-python3}
H=$PWD/.llvm-headers
make -j"$(nproc)" all PYTHON="$PY" LLVM_CFLAGS="-I$H/llvm-c-16 -I$H/llvm-16" >"$logs/build.log" 2>&1 ||
    { tail -20 "$logs/build.log"; exit 1; }
narrow=$(sed -n 's/^NARROW_CPU *:= *//p' Makefile)
narrow_tests=$(sed -n 's/^NARROW_TESTS *:= *//p' Makefile)
export PYTHONPATH=pyshim PYTHONUNBUFFERED=1
# The openmp pass is the long one (threshold 0: every loop wakes the team): its files run in 4 shards at once.
shard() { ls tests/test_*.py | awk -v n=4 -v k="$1" 'NR % n == k'; }
pids=()
"$PY" -m pytest -q -p no:cacheprovider tests >"$logs/cpu.log" 2>&1 & pids+=(cpu:$!)
for k in 0 1 2 3; do
    LORIKEET_BACKEND=openmp LORIKEET_PARALLEL_THRESHOLD=0 "$PY" -m pytest -q -p no:cacheprovider $(shard $k) \
        >"$logs/openmp$k.log" 2>&1 & pids+=(openmp$k:$!)
done
LORIKEET_CPU=$narrow "$PY" -m pytest -q -p no:cacheprovider $narrow_tests >"$logs/narrow.log" 2>&1 & pids+=(narrow:$!)
# the gpu pass, where a GPU can be used (one device: its files run one after another)
if [ -z "${NO_GPU_PASS:-}" ] && "$PY" -c 'import sys, lorikeet as lk; sys.exit(not lk.gpu_available()[0])'; then
    LORIKEET_BACKEND=gpu "$PY" -m pytest -q -p no:cacheprovider tests >"$logs/gpu.log" 2>&1 & pids+=(gpu:$!)
fi
status=0
for pass in "${pids[@]}"; do
    wait "${pass#*:}" || status=1
    echo "== ${pass%%:*}: $(tail -n 1 "$logs/${pass%%:*}.log")"
done
exit $status
