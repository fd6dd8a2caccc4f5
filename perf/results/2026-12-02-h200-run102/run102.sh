# Session 16, run 102: (1) A/B, both backends, alternated twice: 9b57be5 (.exp/old) against the
# 15 forward entries merged from run 101's sweeps (fp32 RMSNorm / LayerNorm forwards at sizes
# without a measured entry, mostly on the grid of all rows; fp16 RMSNorm 768 / 1024 / 8192);
# (2) the softmax forwards (scaled, masked; bf16, 1024-16384 keys) swept on both launch grids
# (tune_softmax.py --grids persistent rows; SoftmaxConfig.grid is new).
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r102; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
AB="--no-torch --no-stream --no-jit --no-host --no-liger --target-ms 5"
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=40 bash perf/ab_bench.sh $R/ab32 --ops rmsnorm_fwd,layernorm_fwd --dtypes fp32 --sizes 768,1024,2048,2560,3584,5120,7168 $AB --time-budget 32
cut -c1-120 $R/ab32/summary.csv
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=30 bash perf/ab_bench.sh $R/ab16 --ops rmsnorm_fwd --dtypes fp16 --sizes 768,1024,8192 $AB --time-budget 22
cut -c1-120 $R/ab16/summary.csv
(cd $OUT && tar czf r102a.tgz r102)
timeout 200 python3 perf/tune_softmax.py --out $R/sm --grids persistent rows --ops softmax_fwd masked_softmax_fwd --dtypes bf16 --keys 1024 2048 4096 8192 16384 --top 2 --target-ms 6 --time-budget 185 > $R/sm.log 2>&1
grep -hE "best|rror|budget" $R/sm.log | cut -c1-220
cd $OUT && rm -f r102a.tgz && tar czf r102.tgz r102 && rm -rf r102
