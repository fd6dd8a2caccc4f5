# Session 20, run 130: the LayerNorm kernels with Slice's folded addresses (one address a row)
# and LayerNorm's one-CTA forwards without the inter-CTA exchange (column step a constant; the
# lean output pass widens with prmt); RMSNorm kernels unchanged (same SASS, dev box). A/B
# against HEAD's kernels (4314aac), NVRTC, alternated twice: bf16 LayerNorm ops (FP8-output
# forward included) at 1024-65536, fp16 / fp32 at 4096 / 16384 / 65536; then the GPU tests of
# the NVRTC norms.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r130; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
COMMON="--ops layernorm --backends nvrtc --no-torch --no-stream --no-jit --no-host --no-liger --target-ms 4"
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=60 bash perf/ab_bench.sh $R/bf16 $COMMON --dtypes bf16 --sizes 1024,2048,4096,8192,16384,32768,65536 --time-budget 35
cut -c1-100 $R/bf16/summary.csv
(cd $OUT && tar czf r130a.tgz r130)
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=50 bash perf/ab_bench.sh $R/f16f32 $COMMON --dtypes fp16,fp32 --sizes 4096,16384,65536 --time-budget 30
cut -c1-100 $R/f16f32/summary.csv
(cd $OUT && rm -f r130a.tgz && tar czf r130b.tgz r130)
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 150 bash perf/gpu_suite.sh tests tests/gpu/test_nvrtc_norms_gpu.py tests/gpu/test_fp8_gpu.py tests/gpu/test_norms_api_gpu.py tests/gpu/test_measured_gpu.py -q -x -p xdist 2>&1 | tail -3
cd $OUT && rm -f r130b.tgz && tar czf r130.tgz r130 && rm -rf r130
