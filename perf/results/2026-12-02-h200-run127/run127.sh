# Session 20, run 127: NVRTC norm kernels with the CTA count of a row compiled in (one CTA a
# row: constant column step, one address a row with immediate offsets) against HEAD (4314aac).
# A/B, NVRTC, alternated twice, bf16, every norm op (FP8-output forwards included) at
# 1024-65536; then the GPU tests of the NVRTC norms on the new kernels.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r127; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
AB="--ops norms --dtypes bf16 --sizes 1024,2048,4096,8192,16384,32768,65536 --backends nvrtc --no-torch --no-stream --no-jit --no-host --no-liger --target-ms 4 --time-budget 50"
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=75 bash perf/ab_bench.sh $R/ab $AB
cut -c1-130 $R/ab/summary.csv
(cd $OUT && tar czf r127a.tgz r127)
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 150 bash perf/gpu_suite.sh tests tests/gpu/test_nvrtc_norms_gpu.py tests/gpu/test_fp8_gpu.py tests/gpu/test_norms_api_gpu.py tests/gpu/test_measured_gpu.py -q -x -p xdist 2>&1 | tail -8
cd $OUT && rm -f r127a.tgz && tar czf r127.tgz r127 && rm -rf r127
