# Session 19, run 121: (1) NVRTC: tune_norms.py --wgrad-smem only at fp16 layernorm_bwd 16384 /
# 32768 and rmsnorm_bwd 65536 (bf16's entries with shared-memory sums spilled in fp16, run 119);
# (2) the Numba backward with its sums in shared memory, first timed on a GPU: tune_norms.py
# --backend numba --refine (run 117's and run 120's sweeps, bf16, sums in shared memory)
# --wgrad-smem also --top 2 at layernorm_bwd / rmsnorm_bwd bf16 16384-65536 (baseline: what the
# Numba backend runs now); (3) winners (> 3%) merged into this machine's tables, then HEAD
# b593c72's tables against this tree's (runs 119 / 120 entries included), both backends,
# alternated twice.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r121; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
TUNE="--top 1 --shape-prefetch --wgrad-smem only --target-ms 4"
timeout 60 python3 perf/tune_norms.py --out $R/f16ln --ops layernorm_bwd --dtypes fp16 --sizes 16384 32768 $TUNE --time-budget 50 > $R/f16ln.log 2>&1
echo "tune fp16 ln rc=$?"
timeout 40 python3 perf/tune_norms.py --out $R/f16rms --ops rmsnorm_bwd --dtypes fp16 --sizes 65536 $TUNE --time-budget 30 > $R/f16rms.log 2>&1
echo "tune fp16 rms rc=$?"
P=perf/results/2026-12-02-h200
timeout 240 python3 perf/tune_norms.py --out $R/nb --backend numba --refine $P-run117/wg/tune.csv $P-run120/rms/tune.csv --wgrad-smem also --top 2 --ops layernorm_bwd rmsnorm_bwd --dtypes bf16 --sizes 16384 32768 65536 --target-ms 4 --time-budget 220 > $R/nb.log 2>&1
echo "tune numba rc=$?"
grep -hE "best|skipping|rror|Traceback" $R/f16ln.log $R/f16rms.log $R/nb.log | cut -c1-220
for w in f16ln f16rms; do
  [ -f $R/$w/measured_norms.json ] && python3 perf/merge_measured.py $R/$w/measured_norms.json --run $P-run121 --min-gain 0.03
done
[ -f $R/nb/measured_norms_numba.json ] && python3 perf/merge_measured.py $R/nb/measured_norms_numba.json --run $P-run121 --min-gain 0.03
cp numba_norms/data/measured_norms.json numba_norms/data/measured_norms_numba.json $R/
(cd $OUT && tar czf r121a.tgz r121)
AB="--no-torch --no-stream --no-jit --no-host --no-liger --target-ms 4"
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=60 bash perf/ab_bench.sh $R/ab --ops layernorm_bwd,rmsnorm_bwd --dtypes bf16,fp16 --sizes 16384,32768,65536 $AB --time-budget 32
cut -c1-150 $R/ab/summary.csv
cd $OUT && rm -f r121a.tgz && tar czf r121.tgz r121 && rm -rf r121
