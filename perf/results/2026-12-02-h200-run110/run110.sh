# Session 17, run 110: which half of run 109's forward change moved what: A/B (NVRTC,
# alternated twice) of b2c0a9b (.exp/old) against (va) the row maximum as a tree with the
# per-column test kept, and (vb) the slice without the per-column test with the maximum as a
# chain; the shapes run 109 moved most.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r110; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
AB="--no-torch --no-stream --no-jit --no-host --no-liger --target-ms 5 --backends nvrtc"
for v in va vb; do
  OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=45 bash .exp/$v/perf/ab_bench.sh $R/ab_$v --ops softmax_fwd,masked_softmax_fwd --dtypes bf16 --sizes 1024,4096,8192,16384,32768,131072 $AB --time-budget 35
  echo "== $v"; cut -c1-100 $R/ab_$v/summary.csv
  OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=30 bash .exp/$v/perf/ab_bench.sh $R/ab32_$v --ops softmax_fwd --dtypes fp32 --sizes 8192,32768,131072 $AB --time-budget 20
  cut -c1-100 $R/ab32_$v/summary.csv
done
cd $OUT && tar czf r110.tgz r110 && rm -rf r110
