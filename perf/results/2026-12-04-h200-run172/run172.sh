# Session 28, run 172 (the streaming backward and the reversed second pass, uncommitted tree on
# 2c23f4a): the softmax GPU test files, then the streaming sweep of the backward
# (perf/tune_softmax.py --stream: every STREAM_SHAPES shape walked both ways) at 32768 / 131072
# keys in three dtypes, against the serving held-row entries.
. perf/device_env.sh
R=$OUT/r172; mkdir -p $R
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 200 bash perf/gpu_suite.sh tests tests/gpu/test_nvrtc_softmax_gpu.py tests/gpu/test_numba_softmax_gpu.py -rfEs --maxfail=25 -p xdist 2>&1 | tail -6
timeout 370 python3 perf/tune_softmax.py --out $R/tune --stream \
  --ops softmax_bwd --dtypes bf16 fp16 fp32 \
  --keys 32768 131072 --target-ms 4 --time-budget 330 2>&1 | grep -v "^  " | tail -20
cd $OUT && tar czf r172.tgz r172 && rm -rf r172
