# Session 19, run 123: (1) tune_norms.py --wgrad-smem also --shape-prefetch --top 1 at fp16
# layernorm_bwd 16384 / 65536 now that the backward widens fp16 with Remat (run 121's fp16 sweep
# ran before it); winners (> 3% over TE's entry) merged into this machine's copy of the shared
# table, then HEAD 0808f35's tables (.exp/old) against the merged ones, NVRTC, alternated twice;
# (2) the whole GPU suite on HEAD's code (Remat in the backward only).
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r123; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 230 bash perf/gpu_suite.sh tests tests tests/gpu -rfEs --maxfail=25 -p xdist > $R/suite.log 2>&1
tail -n 4 $R/suite.log
(cd $OUT && tar czf r123a.tgz r123)
timeout 130 python3 perf/tune_norms.py --out $R/f16 --ops layernorm_bwd --dtypes fp16 --sizes 16384 65536 --top 1 --shape-prefetch --wgrad-smem also --target-ms 4 --time-budget 115 > $R/f16.log 2>&1
echo "tune rc=$?"
grep -hE "best|skipping|rror|Traceback" $R/f16.log | cut -c1-220
[ -f $R/f16/measured_norms.json ] && python3 perf/merge_measured.py $R/f16/measured_norms.json --run perf/results/2026-12-02-h200-run123 --min-gain 0.03
cp numba_norms/data/measured_norms.json $R/measured_norms_merged.json
(cd $OUT && rm -f r123a.tgz && tar czf r123a.tgz r123)
AB="--no-torch --no-stream --no-jit --no-host --no-liger --target-ms 4"
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=45 bash perf/ab_bench.sh $R/ab --ops layernorm_bwd --dtypes fp16 --sizes 16384,65536 --backends nvrtc $AB --time-budget 25
cut -c1-150 $R/ab/summary.csv
cd $OUT && rm -f r123a.tgz && tar czf r123.tgz r123 && rm -rf r123
