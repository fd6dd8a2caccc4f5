# Session 17, run 109: (1) A/B, NVRTC, alternated twice: b2c0a9b (.exp/old) against the scaled /
# masked softmax forward without the per-column bounds test where a thread's slice lies inside
# the row, and the row maximum as a tree (causal kernels unchanged, same SASS); bf16 / fp16 /
# fp32, 1024-131072 keys. (2) tune_softmax.py --grids persistent rows on the new code, bf16
# scaled and masked forwards, 4096-131072 keys.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r109; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
AB="--no-torch --no-stream --no-jit --no-host --no-liger --target-ms 5 --backends nvrtc"
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=60 bash perf/ab_bench.sh $R/ab --ops softmax_fwd,masked_softmax_fwd --dtypes bf16,fp16,fp32 --sizes 1024,2048,4096,8192,16384,32768,131072 $AB --time-budget 50
cut -c1-120 $R/ab/summary.csv
(cd $OUT && tar czf r109a.tgz r109)
S="python3 perf/tune_softmax.py --grids persistent rows --top 2 --target-ms 6"
timeout 200 $S --out $R/sm --ops softmax_fwd masked_softmax_fwd --dtypes bf16 --keys 4096 8192 16384 32768 131072 --time-budget 185 > $R/sm.log 2>&1
grep -hE "best|rror|budget" $R/sm.log | cut -c1-230
cd $OUT && rm -f r109a.tgz && tar czf r109.tgz r109 && rm -rf r109
