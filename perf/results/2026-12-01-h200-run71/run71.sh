# Session 11, run 71: the chained-kernels GPU test (new) and the rest of the norm API tests.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache PYTHONPATH=/tmp/site:$PWD
timeout 240 python3 -m pytest -q -m gpu -p no:cacheprovider -p xdist -n 8 tests/gpu/test_norms_api_gpu.py -rfE 2>&1 | tail -n 15 | tee $OUT/tests71.log
