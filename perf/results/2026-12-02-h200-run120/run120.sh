# Session 19, run 120: tune_norms.py --wgrad-smem only (every shape with and without the pipeline,
# its dgamma / dbeta sums in shared memory; register caps on the best) at rmsnorm_bwd bf16 32768 /
# 65536 and layernorm_bwd fp32 16384 / 32768 / 65536; winners (> 3% over TE's entry) merged into
# this machine's copy of the shared table, then HEAD's tables (.exp/old) against the merged ones,
# NVRTC, alternated twice.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r120; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
TUNE="--top 1 --shape-prefetch --wgrad-smem only --target-ms 4"
timeout 120 python3 perf/tune_norms.py --out $R/rms --ops rmsnorm_bwd --dtypes bf16 --sizes 65536 32768 $TUNE --time-budget 105 > $R/rms.log 2>&1
echo "tune rms rc=$?"
timeout 220 python3 perf/tune_norms.py --out $R/ln32 --ops layernorm_bwd --dtypes fp32 --sizes 65536 32768 16384 $TUNE --time-budget 200 > $R/ln32.log 2>&1
echo "tune ln fp32 rc=$?"
grep -hE "best|skipping|rror|Traceback" $R/rms.log $R/ln32.log | cut -c1-220
for w in rms ln32; do
  [ -f $R/$w/measured_norms.json ] && python3 perf/merge_measured.py $R/$w/measured_norms.json --run perf/results/2026-12-02-h200-run120 --min-gain 0.03
done
cp numba_norms/data/measured_norms.json $R/measured_norms_merged.json
(cd $OUT && tar czf r120a.tgz r120)
AB="--no-torch --no-stream --no-jit --no-host --no-liger --target-ms 5"
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=45 bash perf/ab_bench.sh $R/ab --ops layernorm_bwd,rmsnorm_bwd --dtypes bf16,fp32 --sizes 16384,32768,65536 --backends nvrtc $AB --time-budget 30
cut -c1-150 $R/ab/summary.csv
cd $OUT && rm -f r120a.tgz && tar czf r120.tgz r120 && rm -rf r120
