# Session 27, run 170 (tree: run 169's less the two Numba entries equal to the shared ones): the Numba softmax GPU tests
# and the softmax API tests (the Numba backend's own entries are checked one by one there).
. perf/device_env.sh
R=$OUT/r170; mkdir -p $R
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 150 bash perf/gpu_suite.sh tests tests/gpu/test_numba_softmax_gpu.py tests/gpu/test_softmax_api_gpu.py -rfEs --maxfail=25 -p xdist 2>&1 | tail -4
cd $OUT && tar czf r170.tgz r170 && rm -rf r170
