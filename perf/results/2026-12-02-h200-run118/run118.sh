# Session 18, run 118: (1) A/B, both backends, alternated twice: HEAD 62bfa86 (.exp/old) against
# this tree at fp32 / bf16 layernorm_bwd and rmsnorm_bwd with 131072 columns (generated entries:
# rows now span at most 8 CTAs, where fp32 took 16); (2) the whole GPU suite on the session's
# code and tables (run 117's three layernorm_bwd entries with wgrad_smem merged).
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r118; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
AB="--no-torch --no-stream --no-jit --no-host --no-liger --target-ms 4"
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=40 bash perf/ab_bench.sh $R/ab --ops layernorm_bwd,rmsnorm_bwd --dtypes fp32,bf16 --sizes 131072 $AB --time-budget 30
cut -c1-150 $R/ab/summary.csv
(cd $OUT && tar czf r118a.tgz r118)
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 230 bash perf/gpu_suite.sh tests tests tests/gpu -rfEs --maxfail=25 -p xdist > $R/suite.log 2>&1
tail -n 8 $R/suite.log
cd $OUT && rm -f r118a.tgz && tar czf r118.tgz r118 && rm -rf r118
