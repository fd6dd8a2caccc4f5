# Session 28, run 177 (tree f9efe1b, the session's last code): the whole GPU test suite, then
# bench.py on the softmax rows the session changed (bf16 / fp16 / fp32, 32768 / 131072 keys,
# both backends beside torch eager).
. perf/device_env.sh
R=$OUT/r177; mkdir -p $R
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 330 bash perf/gpu_suite.sh tests tests/gpu -rfEs --maxfail=25 -p xdist 2>&1 | tail -6
timeout 200 python3 perf/bench.py --out $R/bench --ops softmax_fwd,masked_softmax_fwd,aligned_causal_softmax_fwd,softmax_bwd --backends nvrtc,numba --dtypes bf16,fp16,fp32 --sizes 32768,131072 --time-budget 170 --no-jit --no-host --no-liger --target-ms 4 2>&1 | grep -A40 "^SUMMARY" | head -30
cd $OUT && tar czf r177.tgz r177 && rm -rf r177
