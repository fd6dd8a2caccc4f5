#!/usr/bin/env bash
# The CPU test suite (what CI runs). Two pytest passes, because Numba's CUDA simulator is a
# process-wide switch read when numba is imported:
#   1. NUMBA_ENABLE_CUDASIM=1: Numba numerics end to end through the public API at small sizes;
#   2. without it: NVRTC compiles every kernel to cubin and Numba compiles every kernel to PTX.
# GPU tests (marker `gpu`) skip here. Extra arguments go to both passes.
# Each pass spreads its tests over one pytest-xdist worker a core (CPU_TEST_WORKERS=N to
# change it, 1 for none): on the 2-core CI machine the two passes took 22 + 25 min one at a
# time, 9 + 15 min on two workers (2026-12-05).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$(command -v python || command -v python3 || echo python)}
workers=${CPU_TEST_WORKERS:-$("$PY" -c 'import os; print(len(os.sched_getaffinity(0)))' 2>/dev/null || echo 1)}
spread=()
if [ "$workers" -gt 1 ] && "$PY" -c 'import xdist' 2>/dev/null; then
  spread=(-n "$workers" -p xdist)
fi
status=0
NUMBA_ENABLE_CUDASIM=1 "$PY" -m pytest -q -m "not gpu" ${spread[@]+"${spread[@]}"} "$@" || status=$?
"$PY" -m pytest -q -m "not gpu" ${spread[@]+"${spread[@]}"} "$@" || { rc=$?; [ "$status" -eq 0 ] && status=$rc; }
# pytest's 5 ("no tests collected") is a failure here too.
exit "$status"
