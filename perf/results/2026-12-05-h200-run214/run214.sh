# Session 35, run 214: first GPU contact for the Numba cubins built without a GPU (session 34):
# (1) perf/precompile_demo.sh (both backends precompiled with CUDA_VISIBLE_DEVICES='', then every
# `numba-norms check` case on the GPU; expects 0 NVRTC compiles, 0 disk misses);
# (2) the Numba GPU test files on that same cache (+ rtc GPU tests).
. perf/device_env.sh
R=$OUT/r214; mkdir -p $R
cp .exp/run214.sh $R/
nproc; date -u
export DEMO_CACHE_DIR=/tmp/demo-cache
( time timeout 330 bash perf/precompile_demo.sh ) > $R/demo.log 2>&1; echo "demo rc=$?" | tee -a $R/demo.log
tail -25 $R/demo.log
du -sh /tmp/demo-cache
date -u
NUMBA_NORMS_CACHE_DIR=/tmp/demo-cache GPU_TEST_WORKERS=12 OUT=$R/suite timeout 200 bash perf/gpu_suite.sh tests tests/gpu/test_numba_norms_gpu.py tests/gpu/test_numba_softmax_gpu.py tests/gpu/test_rtc_gpu.py -rfEs --maxfail=25 -p xdist 2>&1 | tail -12
date -u
cd $R && tar czf ../r214.tgz . && cd .. && rm -rf r214
