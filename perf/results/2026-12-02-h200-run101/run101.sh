# Session 16, run 101: (1) the GPU suite on ddacbda (its vector-general test was refactored
# after the last suite; the Numba tests of runs 98-100's entries never ran); (2) the forwards
# swept on both grids at the fp16 / fp32 sizes without a measured entry.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r101; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 230 bash perf/gpu_suite.sh tests tests tests/gpu -rfEs --maxfail=25 -p xdist > $R/suite.log 2>&1
tail -n 15 $R/suite.log
(cd $OUT && tar czf r101a.tgz r101)
T="python3 perf/tune_norms.py --top 2 --shape-prefetch --target-ms 6"
timeout 75 $T --out $R/g16 --grids persistent rows --ops rmsnorm_fwd --dtypes fp16 --sizes 768 1024 2560 3584 8192 --time-budget 65 > $R/g16.log 2>&1
grep -hE "best|rror" $R/g16.log | cut -c1-200
timeout 95 $T --out $R/g32 --grids persistent rows --ops rmsnorm_fwd layernorm_fwd --dtypes fp32 --sizes 768 1024 2048 2560 3584 5120 7168 --time-budget 85 > $R/g32.log 2>&1
grep -hE "best|rror" $R/g32.log | cut -c1-200
cd $OUT && rm -f r101a.tgz && tar czf r101.tgz r101 && rm -rf r101
