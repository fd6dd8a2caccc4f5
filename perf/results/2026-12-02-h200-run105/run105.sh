# Session 16, run 105: sweeps on both launch grids where none ran: fp32 RMSNorm / LayerNorm
# forwards 12288 / 16384 and fp16 ones at 16384 (tune_norms.py --grids persistent rows); the
# softmax forwards (scaled, masked) at 32768 keys, the longest row one CTA holds
# (tune_softmax.py --grids persistent rows, bf16 / fp16 / fp32).
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r105; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
T="python3 perf/tune_norms.py --top 2 --shape-prefetch --target-ms 6 --grids persistent rows --ops rmsnorm_fwd layernorm_fwd"
timeout 60 $T --out $R/g32 --dtypes fp32 --sizes 12288 16384 --time-budget 50 > $R/g32.log 2>&1
grep -hE "best|rror" $R/g32.log | cut -c1-200
timeout 40 $T --out $R/g16 --dtypes fp16 --sizes 16384 --time-budget 30 > $R/g16.log 2>&1
grep -hE "best|rror" $R/g16.log | cut -c1-200
timeout 70 python3 perf/tune_softmax.py --out $R/sm --grids persistent rows --ops softmax_fwd masked_softmax_fwd --dtypes bf16 fp16 fp32 --keys 32768 --top 2 --target-ms 6 --time-budget 60 > $R/sm.log 2>&1
grep -hE "best|rror|budget" $R/sm.log | cut -c1-220
cd $OUT && tar czf r105.tgz r105 && rm -rf r105
