# Session 21, run 132: single-CTA softmax builds with the CTA count (so the column step) a
# compile-time constant: each vector's address is the row's plus an immediate. A/B against
# HEAD's kernels (2905fd8), NVRTC, alternated twice: every softmax op bf16 at 1024-131072 keys,
# fp16 / fp32 at 4096 / 16384 / 32768; then the GPU tests of the NVRTC softmax.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r132; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
COMMON="--ops softmax --backends nvrtc --no-torch --no-stream --no-jit --no-host --no-liger --target-ms 4"
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=60 bash perf/ab_bench.sh $R/bf16 $COMMON --dtypes bf16 --sizes 1024,2048,4096,8192,16384,32768,131072 --time-budget 40
cut -c1-100 $R/bf16/summary.csv
(cd $OUT && tar czf r132a.tgz r132)
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=50 bash perf/ab_bench.sh $R/f16f32 $COMMON --dtypes fp16,fp32 --sizes 4096,16384,32768 --time-budget 30
cut -c1-100 $R/f16f32/summary.csv
(cd $OUT && rm -f r132a.tgz && tar czf r132b.tgz r132)
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 150 bash perf/gpu_suite.sh tests tests/gpu/test_nvrtc_softmax_gpu.py tests/gpu/test_softmax_api_gpu.py tests/gpu/test_measured_gpu.py -q -x -p xdist 2>&1 | tail -3
cd $OUT && rm -f r132b.tgz && tar czf r132.tgz r132 && rm -rf r132
