# Session 30, run 183 (tree b70f332, session 29's last code): the whole GPU test suite (session
# 29 ran only the softmax files), then bench.py on the softmax forwards at 32768 / 131072 keys
# beside torch eager, both backends.
. perf/device_env.sh
R=$OUT/r183; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > $R/gpu.txt
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 440 bash perf/gpu_suite.sh tests tests/gpu -rfEs --maxfail=25 -p xdist 2>&1 | tail -8
(cd $OUT && tar czf r183a.tgz r183)
timeout 120 python3 perf/bench.py --out $R/bench --ops softmax_fwd,masked_softmax_fwd,aligned_causal_softmax_fwd --backends nvrtc,numba --dtypes bf16,fp16,fp32 --sizes 32768,131072 --time-budget 100 --no-jit --no-host --no-liger --target-ms 4 2>&1 | grep -A40 "^SUMMARY" | head -30
cd $OUT && rm -f r183a.tgz && tar czf r183.tgz r183 && rm -rf r183
