# Session 17, run 108: the softmax forwards with SoftmaxConfig.recompute (new: the row kept as
# loaded, converted again for the sum and the output passes) swept beside the current shapes:
# tune_softmax.py --recompute --grids persistent rows --max-elts 128, bf16 scaled and masked,
# 4096-131072 keys.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r108; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
S="python3 perf/tune_softmax.py --recompute --grids persistent rows --max-elts 128 --top 2 --target-ms 6"
timeout 330 $S --out $R/sm --ops softmax_fwd masked_softmax_fwd --dtypes bf16 --keys 4096 8192 16384 32768 131072 --time-budget 315 > $R/sm.log 2>&1
grep -hE "best|rror|budget" $R/sm.log | cut -c1-230
(cd $OUT && tar czf r108a.tgz r108)
timeout 200 $S --out $R/up --ops upper_triang_softmax_fwd --dtypes bf16 --keys 8192 16384 32768 131072 --time-budget 185 > $R/up.log 2>&1
grep -hE "best|rror|budget" $R/up.log | cut -c1-230
cd $OUT && rm -f r108a.tgz && tar czf r108.tgz r108 && rm -rf r108
