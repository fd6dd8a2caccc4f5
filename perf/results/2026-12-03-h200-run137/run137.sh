# Session 22, run 137: __restrict__ on the data pointers of the NVRTC norm kernels (norm_fwd,
# norm_bwd) and softmax kernels: loads become ld.global.nc and may move past the stores
# (dev box: rmsnorm_fwd_fp8 bf16 65536 now issues its 8 row loads together and its re-read
# gamma loads ahead of the stores, as the Numba kernel does). A/B against HEAD's kernels
# (2b5cc18), NVRTC, alternated twice: bf16 norm ops (FP8-output forwards included) at
# 768-65536; then the GPU tests of the NVRTC norms.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r137; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
COMMON="--ops layernorm,rmsnorm --backends nvrtc --no-torch --no-stream --no-jit --no-host --no-liger --target-ms 4"
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=110 bash perf/ab_bench.sh $R/bf16 $COMMON --dtypes bf16 --sizes 768,1024,2048,4096,7168,8192,12288,16384,32768,65536 --time-budget 70
cut -c1-100 $R/bf16/summary.csv
(cd $OUT && tar czf r137a.tgz r137)
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 120 bash perf/gpu_suite.sh tests tests/gpu/test_nvrtc_norms_gpu.py tests/gpu/test_fp8_gpu.py tests/gpu/test_norms_api_gpu.py tests/gpu/test_measured_gpu.py -q -x -p xdist 2>&1 | tail -3
cd $OUT && rm -f r137a.tgz && tar czf r137.tgz r137 && rm -rf r137
