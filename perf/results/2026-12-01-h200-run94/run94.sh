# Session 14, run 94: a lead from run 93 (Liger's Triton RMSNorm forward, one row per program and
# a grid of all rows, ran 92.7-93.9% of the ceiling where ours ran 86.5-89.6%): our forwards
# with a grid of one CTA per warps_m rows (non-persistent: one trip a CTA) instead of the
# persistent grid of resident CTAs. Experiment only: the planner is patched on this machine, the
# switch is an environment variable, forwards of one CTA a row only; alternated twice.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r94; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
python3 - <<'PY'
p = "numba_norms/planner.py"
s = open(p).read()
a = "    groups = resident // ctas_per_row\n"
assert s.count(a) == 1
s = s.replace(a, a + "    if ctas_per_row == 1 and not spec.n_partials and __import__('os').environ.get('NN_EXP_GRID') == 'rows':\n        groups = rows\n")
open(p, "w").write(s)
PY
B="--ops layernorm_fwd,rmsnorm_fwd --dtypes bf16 --sizes 2048,4096,8192,16384 --no-torch --no-stream --no-jit --no-host --time-budget 30 --target-ms 5"
for k in 1 2; do
  timeout 45 python3 perf/bench.py --out $R/old$k $B > $R/old$k.txt 2>&1
  NN_EXP_GRID=rows timeout 45 python3 perf/bench.py --out $R/new$k $B > $R/new$k.txt 2>&1
done
python3 perf/ab_summary.py $R > $R/summary.csv; cut -c1-150 $R/summary.csv
cd $OUT && tar czf r94.tgz r94 && rm -rf r94
