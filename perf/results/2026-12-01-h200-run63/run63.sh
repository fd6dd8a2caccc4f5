# Session 10, run 63: the whole GPU suite on the final commit (tables after run 61's selection)
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
GPU_TEST_WORKERS=12 OUT=$OUT/suite timeout 260 bash perf/gpu_suite.sh tests tests tests/gpu -rfE --maxfail=25 -p xdist > $OUT/tests63.log 2>&1
tail -n 5 $OUT/tests63.log
