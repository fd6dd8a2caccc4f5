#!/usr/bin/env bash
# The CPU test suite (what CI runs). Two pytest passes, because Numba's CUDA simulator is a
# process-wide switch read when numba is imported:
#   1. NUMBA_ENABLE_CUDASIM=1: Numba numerics end to end through the public API at small sizes;
#   2. without it: NVRTC compiles every kernel to cubin and Numba compiles every kernel to PTX.
# GPU tests (marker `gpu`) skip here. Extra arguments go to both passes.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
status=0
NUMBA_ENABLE_CUDASIM=1 "$PY" -m pytest -q -m "not gpu" "$@" || status=$?
"$PY" -m pytest -q -m "not gpu" "$@" || { rc=$?; [ "$status" -eq 0 ] && status=$rc; }
# pytest's 5 ("no tests collected") is a failure here too.
exit "$status"
