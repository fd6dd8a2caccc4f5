# Session 13, run 87: layernorm_bwd bf16 / fp16 at 4096 / 5120 / 8192 (83-85% of the ceiling,
# target 85%) re-swept with the software pipeline on every shape (tune_norms.py
# --shape-prefetch); the winners merged into this machine's copy of the table
# (merge_measured.py, as the commit would) and timed against HEAD's tables (.exp/old), both
# backends, alternated twice.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r87; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
timeout 150 python3 perf/tune_norms.py --out $R/sweep --ops layernorm_bwd --dtypes bf16 fp16 --sizes 4096 5120 8192 --top 2 --shape-prefetch --time-budget 120 --target-ms 8 > $R/sweep.log 2>&1
grep -E "best|skipping" $R/sweep.log
python3 perf/merge_measured.py $R/sweep/measured_norms.json --run perf/results/2026-12-01-h200-run87
B="--ops layernorm_bwd --dtypes bf16,fp16 --sizes 4096,5120,8192 --no-torch --no-liger --no-jit --no-host --time-budget 30 --target-ms 5"
for k in 1 2; do
  (cd .exp/old && PYTHONPATH=/tmp/site:$PWD timeout 45 python3 perf/bench.py --out $R/old$k $B > $R/old$k.txt 2>&1)
  timeout 45 python3 perf/bench.py --out $R/new$k $B > $R/new$k.txt 2>&1
done
python3 perf/ab_summary.py $R > $R/summary.csv 2>&1; cat $R/summary.csv | cut -c1-130
grep -h "%ceil\|layernorm_bwd" $R/new1.txt | cut -c1-100
cd $OUT && tar czf r87.tgz r87 && rm -rf r87
