# Session 37, run 220: the NVRTC softmax GPU file after run 217's test fix (its test planned a
# staged entry on the counter path without dispatch's fallback), the dispatch tests; then, on an
# H200 only (the tables are H200 timings), run 216's staged masked sweep.
set -u
R=$OUT/r220; mkdir -p $R
cp .exp/run220.sh $R/
nvidia-smi --query-gpu=name --format=csv,noheader | tee $R/gpu.txt
. perf/device_env.sh || exit 1
date -u
GPU_TEST_WORKERS=15 OUT=$R/suite timeout 150 bash perf/gpu_suite.sh tests tests/gpu/test_nvrtc_softmax_gpu.py tests/gpu/test_softmax_api_gpu.py -rfE --maxfail=10 -p xdist -q 2>&1 | tail -4
date -u
if grep -q H200 $R/gpu.txt; then
  OUT=$R bash .exp/run216.sh
fi
date -u
cd $R && tar czf ../r220.tgz . && cd .. && rm -rf r220
