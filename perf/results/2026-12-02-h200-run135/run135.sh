# Session 21, run 135: the Numba LayerNorm forwards pipelined only where the register estimate
# leaves 8 more registers than RMSNorm's (at exactly the cap they spilled 64-140 B on the dev
# box). A/B against HEAD's package (2905fd8), Numba, alternated twice: layernorm_fwd and the
# FP8-output forward, bf16 / fp16, 2560-65536; then the GPU tests of the Numba norms and FP8.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r135; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=200 bash perf/ab_bench.sh $R/lnfwd --ops layernorm_fwd,layernorm_fwd_fp8 --backends numba --no-torch --no-stream --no-jit --no-host --no-liger --target-ms 4 --dtypes bf16,fp16 --sizes 2560,4096,8192,12288,16384,32768,65536 --time-budget 45
cut -c1-100 $R/lnfwd/summary.csv
(cd $OUT && tar czf r135a.tgz r135)
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 170 bash perf/gpu_suite.sh tests tests/gpu/test_numba_norms_gpu.py tests/gpu/test_fp8_gpu.py -q -x -p xdist 2>&1 | tail -3
cd $OUT && rm -f r135a.tgz && tar czf r135.tgz r135 && rm -rf r135
