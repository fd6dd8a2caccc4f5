#!/usr/bin/env bash
# Everything that needs the GPU, in one call: GPU tests, then the benchmarks.
#
#   bash perf/gpu_suite.sh [tests|bench|all] [pytest args: files, -k ...; default tests/gpu]
#
# Results go to $OUT (the device tool's folder) or perf/results/latest: gpu_tests.log,
# junit.xml, bench.csv, bench.txt, jit.csv, host.csv, info.txt. The environment (the numpy 2.4
# wheel carried in .whl/ on the device machine, the kernel cache) is perf/device_env.sh's.
set -uo pipefail
cd "$(dirname "$0")/.."
what=${1:-all}; shift || true
. perf/device_env.sh || exit 1
out=${OUT:-perf/results/latest}
mkdir -p "$out"
python3 -m numba_norms info | tee "$out/info.txt"
status=0
if [ "$what" = tests ] || [ "$what" = all ]; then
  [ $# -gt 0 ] || set -- tests/gpu
  # GPU_TEST_WORKERS=N spreads the tests over N processes (pytest-xdist, carried in .whl/ like
  # numpy): the suite is bound by Numba/NVRTC compiles on the host, not by the GPU.
  workers=()
  [ -n "${GPU_TEST_WORKERS:-}" ] && workers=(-n "$GPU_TEST_WORKERS")
  python3 -m pytest -q -m gpu --junitxml="$out/junit.xml" -p no:cacheprovider "${workers[@]}" "$@" \
    2>&1 | tee "$out/gpu_tests.log" | tail -n 60
  status=${PIPESTATUS[0]}
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  python3 perf/bench.py --out "$out" ${BENCH_ARGS:-} || status=1
fi
exit "$status"
