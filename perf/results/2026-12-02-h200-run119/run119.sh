# Session 19, run 119: (1) A/B, NVRTC, alternated twice: HEAD b593c72's tables (.exp/old) against
# this tree's, where six backward entries were taken from neighbours without a sweep: fp16
# layernorm_bwd 16384 / 32768 / 65536 <- run 117's bf16 entries (sums in shared memory), fp16
# rmsnorm_bwd 65536 <- bf16's entry, fp32 rmsnorm_bwd 32768 / 65536 <- the Numba backend's own
# entries (uncapped, pipelined); the other fp16 / fp32 backward shapes at those sizes are controls;
# (2) the whole GPU suite (first run of the Numba wgrad_smem GPU test and the NVRTC test's
# final form).
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r119; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
AB="--no-torch --no-stream --no-jit --no-host --no-liger --target-ms 5"
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=55 bash perf/ab_bench.sh $R/ab --ops layernorm_bwd,rmsnorm_bwd --dtypes fp16,fp32 --sizes 16384,32768,65536 --backends nvrtc $AB --time-budget 40
cut -c1-150 $R/ab/summary.csv
(cd $OUT && tar czf r119a.tgz r119)
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 230 bash perf/gpu_suite.sh tests tests tests/gpu -rfEs --maxfail=25 -p xdist > $R/suite.log 2>&1
tail -n 8 $R/suite.log
cd $OUT && rm -f r119a.tgz && tar czf r119.tgz r119 && rm -rf r119
