#!/usr/bin/env bash
# Precompile-then-run, on one GPU host: build the NVRTC cache with no GPU visible (as a CPU
# builder would, same NVRTC version: the cache key includes it), then run every case of
# `numba-norms check` on the GPU through NVRTC and count NVRTC compiles (expected: 0).
#
#   bash perf/precompile_demo.sh        # ARCH=sm_90 by default; exits 1 on any compile or failure
set -uo pipefail
cd "$(dirname "$0")/.."
NUMBA_NORMS_CACHE_DIR=$(mktemp -d)
export NUMBA_NORMS_CACHE_DIR
echo "== 1. no visible GPU (CUDA_VISIBLE_DEVICES=''): precompile --arch ${ARCH:-sm_90}"
CUDA_VISIBLE_DEVICES='' python3 -m numba_norms info | grep -iE "^ *(gpu|backend)" || true
CUDA_VISIBLE_DEVICES='' python3 -m numba_norms precompile --arch "${ARCH:-sm_90}" || exit 1
python3 -m numba_norms cache list | tail -n 1
echo "== 2. GPU visible, fresh process: every NVRTC case of 'numba-norms check'"
python3 - <<'PY'
import rtc
from numba_norms import check

rows = check.run_checks(("nvrtc",), small=False)
s = rtc.stats()
bad = [r for r in rows if not r.passed or r.backend != "nvrtc"]
print(f"{len(rows)} cases, {len(bad)} failed; rtc.stats() = {s}")
raise SystemExit(1 if bad or s.get("nvrtc_compiles", 0) else 0)
PY
