#!/usr/bin/env bash
# Runs `python -m lorikeet info` N times (P at once) and counts the runs that did not exit cleanly: the check for
# the crash at exit of a process that opened the CUDA device and left at once (runtime/gpu_driver.c,
# wait_for_opener). On a machine with a GPU, from the project root, after a build:
#   N=400 P=8 sh scripts/exit_probe.sh
set -u
PY=${PYTHON:-python3}
export PYTHONPATH=pyshim LORIKEET_CACHE_DIR=$(mktemp -d)
seq 1 "${N:-200}" | xargs -P "${P:-8}" -I{} sh -c "$PY -m lorikeet info > /dev/null 2>&1; echo \$?" | sort | uniq -c |
    awk '{ runs += $1; if ($2 != 0) bad += $1; print "  exit status " $2 ": " $1 " runs" }
         END { printf "%d of %d runs did not exit cleanly\n", bad, runs }'
