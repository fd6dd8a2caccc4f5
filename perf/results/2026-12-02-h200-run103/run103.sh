# Session 16, run 103: (1) A/B, both backends, alternated twice: be2c2cb (.exp/old) against the
# five bf16 softmax forward entries merged from run 102's sweep (scaled 1024 / 4096, masked
# 2048 / 4096 / 8192; four on the grid of all rows); (2) tune_softmax.py --grids persistent rows
# for fp16 / fp32 forwards (scaled, masked) and bf16 upper-triangular forward and backward,
# 1024-16384 keys; (3) tune_norms.py --grids for the FP8-output forwards, 1024-8192.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r103; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
AB="--no-torch --no-stream --no-jit --no-host --no-liger --target-ms 5"
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=40 bash perf/ab_bench.sh $R/absm --ops softmax_fwd,masked_softmax_fwd --dtypes bf16 --sizes 1024,2048,4096,8192 $AB --time-budget 30
cut -c1-120 $R/absm/summary.csv
(cd $OUT && tar czf r103a.tgz r103)
S="python3 perf/tune_softmax.py --grids persistent rows --keys 1024 2048 4096 8192 16384 --top 2 --target-ms 6"
timeout 90 $S --out $R/sm16 --ops softmax_fwd masked_softmax_fwd --dtypes fp16 fp32 --time-budget 80 > $R/sm16.log 2>&1
grep -hE "best|rror|budget" $R/sm16.log | cut -c1-220
timeout 70 $S --out $R/smb --ops upper_triang_softmax_fwd softmax_bwd --dtypes bf16 --time-budget 60 > $R/smb.log 2>&1
grep -hE "best|rror|budget" $R/smb.log | cut -c1-220
(cd $OUT && rm -f r103a.tgz && tar czf r103a.tgz r103)
timeout 110 python3 perf/tune_norms.py --top 2 --shape-prefetch --target-ms 6 --out $R/g8 --grids persistent rows --ops rmsnorm_fwd layernorm_fwd --dtypes bf16-fp8 fp16-fp8 fp32-fp8 --sizes 1024 2048 4096 8192 --time-budget 100 > $R/g8.log 2>&1
grep -hE "best|rror" $R/g8.log | cut -c1-200
cd $OUT && rm -f r103a.tgz && tar czf r103.tgz r103 && rm -rf r103
