# Session 22, run 139: one-CTA NVRTC RMSNorm forwards without the inter-CTA exchange AND with
# one address a row (Slice FOLD), the output pass widening again (get_again) and the held weights
# opaque at each row, as LayerNorm's (NN_RMS_FOLD=1 selects it for every one-CTA RMSNorm
# forward; the kernels with the exchange keep 2b5cc18's SASS, dev box). Run 138's ncu:
# rmsnorm_fwd_fp8 bf16 65536 NVRTC executes 1017 instructions a warp and row against Numba's 835
# (addresses, widening), same CPI. A/B against 2b5cc18, NVRTC, alternated twice: rmsnorm_fwd and
# rmsnorm_fwd_fp8, bf16 / fp16 / fp32, 768-65536; then the GPU tests of the NVRTC norms with it.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache NN_RMS_FOLD=1
R=$OUT/r139; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
COMMON="--ops rmsnorm_fwd,rmsnorm_fwd_fp8 --backends nvrtc --no-torch --no-stream --no-jit --no-host --no-liger --target-ms 4"
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=110 bash perf/ab_bench.sh $R/all $COMMON --dtypes bf16,fp16,fp32 --sizes 768,1024,2048,2560,3584,4096,5120,7168,8192,12288,16384,32768,65536 --time-budget 75
cut -c1-90 $R/all/summary.csv
(cd $OUT && tar czf r139a.tgz r139)
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 130 bash perf/gpu_suite.sh tests tests/gpu/test_nvrtc_norms_gpu.py tests/gpu/test_fp8_gpu.py tests/gpu/test_norms_api_gpu.py tests/gpu/test_measured_gpu.py -q -x -p xdist 2>&1 | grep -E "passed|failed|error" | tail -3
cd $OUT && rm -f r139a.tgz && tar czf r139.tgz r139 && rm -rf r139
