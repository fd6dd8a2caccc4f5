# Session 20, run 129: NVRTC norm forwards compiled without the inter-CTA exchange for one-CTA rows
# (column step a constant; the pipelined RMSNorm forwards keep it), every kernel with one address
# a row (run 128's form), the lean forward's output pass widening through prmt; against HEAD
# (4314aac's kernels). A/B, NVRTC, alternated twice: bf16 every norm op at 1024-65536, fp16 and
# fp32 at 4096 / 16384 / 65536; then the GPU tests of the NVRTC norms.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r129; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
COMMON="--ops norms --backends nvrtc --no-torch --no-stream --no-jit --no-host --no-liger --target-ms 4"
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=75 bash perf/ab_bench.sh $R/bf16 $COMMON --dtypes bf16 --sizes 1024,2048,4096,8192,16384,32768,65536 --time-budget 50
cut -c1-110 $R/bf16/summary.csv
(cd $OUT && tar czf r129a.tgz r129)
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=60 bash perf/ab_bench.sh $R/f16f32 $COMMON --dtypes fp16,fp32 --sizes 4096,16384,65536 --time-budget 40
cut -c1-110 $R/f16f32/summary.csv
(cd $OUT && rm -f r129a.tgz && tar czf r129b.tgz r129)
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 120 bash perf/gpu_suite.sh tests tests/gpu/test_nvrtc_norms_gpu.py tests/gpu/test_fp8_gpu.py tests/gpu/test_norms_api_gpu.py tests/gpu/test_measured_gpu.py -q -x -p xdist 2>&1 | tail -4
cd $OUT && rm -f r129b.tgz && tar czf r129.tgz r129 && rm -rf r129
