# Session 13, run 88: the whole GPU suite on 6b9e9a9's tree (one row_sync fixture in
# tests/gpu/conftest.py replacing the four per-module copies; the re-swept tables).
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r88; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 260 bash perf/gpu_suite.sh tests tests tests/gpu -rfEs --maxfail=25 -p xdist > $R/suite.log 2>&1
grep -E "^(FAILED|ERROR)" $R/suite.log | head -20
grep -E "^SKIPPED" $R/suite.log | head -5
tail -n 3 $R/suite.log
cd $OUT && tar czf r88.tgz r88 && rm -rf r88
