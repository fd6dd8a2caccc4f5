# Session 14, run 92: (1) Numba-own shapes for the nine bf16 norm shapes where run 90 had Numba
# below 85% of NVRTC (tune_norms.py --backend numba --refine over the NVRTC sweeps of those
# sizes), winners (> 5%) merged into this machine's measured_norms_numba.json and timed against
# 9d7b2dc's tables (.exp/old), Numba only, alternated twice; (2) the whole GPU suite on the
# merged tables (run 91's and this run's).
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r92; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
SRC="perf/results/2026-11-30-h200-run6/tune.csv perf/results/2026-11-30-h200-run22/sweep/tune.csv perf/results/2026-11-30-h200-run22/refine/tune.csv perf/results/2026-11-30-h200-run24/sweep/tune.csv perf/results/2026-11-30-h200-run24/refine/tune.csv perf/results/2026-12-01-h200-run60/tune.csv perf/results/2026-12-01-h200-run83/nvrtc/tune.csv perf/results/2026-12-01-h200-run91/bwd/tune.csv"
timeout 75 python3 perf/tune_norms.py --out $R/nb1 --backend numba --refine $SRC --top 4 --ops layernorm_bwd --dtypes bf16 --sizes 3584 12288 16384 32768 --time-budget 65 --target-ms 8 > $R/nb1.log 2>&1
timeout 75 python3 perf/tune_norms.py --out $R/nb2 --backend numba --refine $SRC --top 4 --ops rmsnorm_bwd layernorm_fwd --dtypes bf16 --sizes 2560 16384 32768 65536 --time-budget 65 --target-ms 8 > $R/nb2.log 2>&1
grep -hE "best|skipping|rror" $R/nb1.log $R/nb2.log | cut -c1-200
for d in nb1 nb2; do
  [ -f $R/$d/measured_norms_numba.json ] && python3 perf/merge_measured.py $R/$d/measured_norms_numba.json --run perf/results/2026-12-01-h200-run92 --min-gain 0.05
done
cp numba_norms/data/measured_norms_numba.json $R/measured_norms_numba_merged.json
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=45 bash perf/ab_bench.sh $R/ab --backends numba --ops layernorm_bwd,rmsnorm_bwd,layernorm_fwd --dtypes bf16 --sizes 2560,3584,12288,16384,32768,65536 --no-torch --no-stream --no-jit --no-host --time-budget 32 --target-ms 5
cut -c1-150 $R/ab/summary.csv
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 195 bash perf/gpu_suite.sh tests tests tests/gpu -rfEs --maxfail=25 -p xdist > $R/suite.log 2>&1
grep -E "^(FAILED|ERROR)" $R/suite.log | head -20
tail -n 2 $R/suite.log
cd $OUT && tar czf r92.tgz r92 && rm -rf r92
