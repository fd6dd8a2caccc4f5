# Session 11, run 72: the final commit's device query (numba-norms info) and the chained-kernels test.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache PYTHONPATH=/tmp/site:$PWD
python3 -m numba_norms info 2>&1 | tee $OUT/info72.txt
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -p xdist -n 4 tests/gpu/test_norms_api_gpu.py -k "chained or backend_switch or bitwise" -rfE 2>&1 | tail -n 4 | tee $OUT/tests72.log
