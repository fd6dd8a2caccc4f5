# Session 18, run 117: the LayerNorm backward with its dgamma / dbeta sums in shared memory
# (NormConfig.wgrad_smem, new): tune_norms.py --wgrad-smem only (every shape and pipeline setting
# with 1 or 2 of the sums in shared memory, then register caps on the best one; the current entry
# is the baseline) at bf16 16384 / 32768 / 65536; winners (> 3%) merged into this machine's
# copy of the shared table, then HEAD's tables (.exp/old) against it, NVRTC, alternated twice;
# then the new GPU test and the NVRTC norm GPU tests.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r117; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
timeout 210 python3 perf/tune_norms.py --out $R/wg --ops layernorm_bwd --dtypes bf16 --sizes 16384 65536 32768 --top 1 --shape-prefetch --wgrad-smem only --time-budget 190 --target-ms 4 > $R/wg.log 2>&1
echo "tune rc=$?"
grep -hE "best|skipping|rror|Traceback" $R/wg.log | cut -c1-220
[ -f $R/wg/measured_norms.json ] && python3 perf/merge_measured.py $R/wg/measured_norms.json --run perf/results/2026-12-02-h200-run117 --min-gain 0.03
cp numba_norms/data/measured_norms.json $R/measured_norms_merged.json
(cd $OUT && tar czf r117a.tgz r117)
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=50 bash perf/ab_bench.sh $R/ab --ops layernorm_bwd --dtypes bf16 --sizes 16384,32768,65536 --backends nvrtc --no-torch --no-stream --no-jit --no-host --no-liger --time-budget 35 --target-ms 5
cut -c1-150 $R/ab/summary.csv
timeout 100 python3 -m pytest -q -x tests/gpu/test_nvrtc_norms_gpu.py tests/test_nvrtc_norms.py -k "wgrad or tuned_backward" -p no:cacheprovider > $R/tests.log 2>&1
echo "tests rc=$?"; tail -n 5 $R/tests.log
cd $OUT && rm -f r117a.tgz && tar czf r117.tgz r117 && rm -rf r117
