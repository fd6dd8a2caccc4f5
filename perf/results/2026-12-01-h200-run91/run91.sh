# Session 14, run 91: re-sweep of the norm shapes run 90 found far below the same-size stream
# (layernorm_bwd 16384: 72% of it, 12288: 90%; layernorm_fwd 12288: 77%, 65536: 70%), last swept
# in session 5 (runs 22 / 24), before clusters, the finalize and the pipeline on every shape.
# tune_norms.py --shape-prefetch, winners (> 3%) merged into this machine's copy of the table,
# then bf15fbd's tables (.exp/old) vs the merged ones, both backends, alternated twice.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r91; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
timeout 130 python3 perf/tune_norms.py --out $R/bwd --ops layernorm_bwd --dtypes bf16 fp16 --sizes 16384 --top 2 --shape-prefetch --time-budget 110 --target-ms 8 > $R/bwd.log 2>&1
timeout 130 python3 perf/tune_norms.py --out $R/fwd --ops layernorm_fwd --dtypes bf16 fp16 --sizes 12288 65536 --top 2 --shape-prefetch --time-budget 110 --target-ms 8 > $R/fwd.log 2>&1
grep -hE "best|skipping|rror" $R/bwd.log $R/fwd.log | cut -c1-200
for d in bwd fwd; do
  [ -f $R/$d/measured_norms.json ] && python3 perf/merge_measured.py $R/$d/measured_norms.json --run perf/results/2026-12-01-h200-run91 --min-gain 0.03
done
git diff --stat numba_norms/data
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=70 bash perf/ab_bench.sh $R/ab --ops layernorm_fwd,layernorm_bwd --dtypes bf16,fp16 --sizes 12288,16384,65536 --no-torch --no-stream --no-jit --no-host --time-budget 50 --target-ms 5
cut -c1-150 $R/ab/summary.csv
cp numba_norms/data/measured_norms.json $R/measured_norms_merged.json
cd $OUT && tar czf r91.tgz r91 && rm -rf r91
