#!/usr/bin/env bash
# Precompile-then-run, on one GPU host: build the cache with no GPU visible (as a CPU builder
# would, same NVRTC / numba-cuda / linker versions: the cache keys include them), then run every
# case of `numba-norms check` on the GPU through both backends and count builds (expected: 0
# NVRTC compiles and 0 disk misses; a Numba softmax build that spills past SPILL_LIMIT is
# stored with its fallbacks, the spill read from the cubin).
#
#   bash perf/precompile_demo.sh        # ARCH=sm_90, BACKEND=all by default; exits 1 on any
#                                       # build at run time or failed case
set -uo pipefail
cd "$(dirname "$0")/.."
# DEMO_CACHE_DIR keeps the built cache for later steps of the same call (default: a new temp dir).
NUMBA_NORMS_CACHE_DIR=${DEMO_CACHE_DIR:-$(mktemp -d)}
export NUMBA_NORMS_CACHE_DIR
echo "== 1. no visible GPU (CUDA_VISIBLE_DEVICES=''): precompile --arch ${ARCH:-sm_90} --backend ${BACKEND:-all}"
CUDA_VISIBLE_DEVICES='' python3 -m numba_norms info | grep -iE "^ *(gpu|backend)" || true
if [ "${REGISTRY:-1}" != 0 ]; then  # REGISTRY=0: the check's sizes alone (below)
  CUDA_VISIBLE_DEVICES='' python3 -m numba_norms precompile --arch "${ARCH:-sm_90}" \
      --backend "${BACKEND:-all}" || exit 1
fi
# the check's own sizes: hidden 1000 and the short softmax rows take configurations made at run
# time (generated or measured general shapes), which the registry walk does not list
CUDA_VISIBLE_DEVICES='' python3 -m numba_norms precompile --arch "${ARCH:-sm_90}" \
    --backend "${BACKEND:-all}" --hidden 1024 1000 65536 --keys 3 17 1000 4097 || exit 1
python3 -m numba_norms cache list | tail -n 1
echo "== 2. GPU visible, fresh process: every case of 'numba-norms check'"
BACKENDS=$([ "${BACKEND:-all}" = all ] && echo "nvrtc numba" || echo "${BACKEND}") python3 - <<'PY'
import os

import rtc
from numba_norms import check

backends = tuple(os.environ["BACKENDS"].split())
rows = check.run_checks(backends, small=False)
s = rtc.stats()
bad = [r for r in rows if not r.passed or r.backend not in backends]
print(f"{len(rows)} cases ({', '.join(backends)}), {len(bad)} failed; rtc.stats() = {s}")
raise SystemExit(1 if bad or s.get("nvrtc_compiles", 0) or s.get("disk_misses", 0) else 0)
PY
