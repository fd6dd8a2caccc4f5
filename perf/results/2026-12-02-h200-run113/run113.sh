# Session 17, run 113: (1) A/B, NVRTC, alternated twice: b2c0a9b (.exp/old) against this tree at
# the bf16 / fp16 softmax forward, 4096 keys (entry now capped at 7 CTAs an SM); (2) the whole GPU
# suite on the session's final code and tables.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r113; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
AB="--no-torch --no-stream --no-jit --no-host --no-liger --target-ms 5 --backends nvrtc"
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=30 bash perf/ab_bench.sh $R/ab --ops softmax_fwd --dtypes bf16,fp16 --sizes 4096 $AB --time-budget 20
cut -c1-110 $R/ab/summary.csv
(cd $OUT && tar czf r113a.tgz r113)
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 250 bash perf/gpu_suite.sh tests tests tests/gpu -rfEs --maxfail=25 -p xdist > $R/suite.log 2>&1
tail -n 8 $R/suite.log
cd $OUT && rm -f r113a.tgz && tar czf r113.tgz r113 && rm -rf r113
