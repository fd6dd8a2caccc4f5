# Session 17, run 111: tune_softmax.py --grids persistent rows on the forward without the
# per-column test where a thread's slice lies inside the row (run 110's "vb"), scaled and masked
# forwards, bf16 / fp16 / fp32, 1024-131072 keys (baseline: the current entry on the new code).
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r111; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
S="python3 perf/tune_softmax.py --grids persistent rows --top 2 --target-ms 6"
K="1024 2048 4096 8192 16384 32768 131072"
timeout 170 $S --out $R/b16 --ops softmax_fwd masked_softmax_fwd --dtypes bf16 --keys $K --time-budget 160 > $R/b16.log 2>&1
grep -hE "best|rror|budget" $R/b16.log | cut -c1-230
(cd $OUT && tar czf r111a.tgz r111)
timeout 330 $S --out $R/f16 --ops softmax_fwd masked_softmax_fwd --dtypes fp16 fp32 --keys $K --time-budget 315 > $R/f16.log 2>&1
grep -hE "best|rror|budget" $R/f16.log | cut -c1-230
cd $OUT && rm -f r111a.tgz && tar czf r111.tgz r111 && rm -rf r111
