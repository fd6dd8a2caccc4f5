# Session 27, run 171 (tree 4e496ff, the final one: streaming entries serve rows up to their timed
# length, the row-limit helpers): the softmax GPU test files and the torch tests.
. perf/device_env.sh
R=$OUT/r171; mkdir -p $R
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 200 bash perf/gpu_suite.sh tests tests/gpu/test_nvrtc_softmax_gpu.py tests/gpu/test_numba_softmax_gpu.py tests/gpu/test_softmax_api_gpu.py tests/gpu/test_torch_gpu.py -rfEs --maxfail=25 -p xdist 2>&1 | tail -4
cd $OUT && tar czf r171.tgz r171 && rm -rf r171
