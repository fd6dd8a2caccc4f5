# Session 28, run 178 (tree f9efe1b): run 177's whole suite stopped at its 330 s limit with 1656
# tests passed, none failed; this call runs the NVRTC softmax GPU file (its assertions changed
# after run 175) and the Numba path's own softmax entries again.
. perf/device_env.sh
R=$OUT/r178; mkdir -p $R
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 140 bash perf/gpu_suite.sh tests tests/gpu/test_nvrtc_softmax_gpu.py tests/gpu/test_numba_softmax_gpu.py -k "not test_streaming_kernels or nvrtc" -rfEs --maxfail=25 -p xdist 2>&1 | tail -3
cd $OUT && tar czf r178.tgz r178 && rm -rf r178
