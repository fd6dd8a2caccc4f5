# Session 12, run 76: numba-norms info (the multi-CTA row) and the multi-CTA GPU tests of both
# backends after the row-count fix of test_multi_cta_several_row_trips (run 74's two failures).
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache PYTHONPATH=/tmp/site:$PWD
mkdir -p $OUT/r76
python3 -m numba_norms info 2>&1 | tee $OUT/r76/info.txt
timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider -p xdist -n 8 tests/gpu -k "multi or row_sync or many_rows or trips" -rfE 2>&1 | tail -n 6 | tee $OUT/r76/tests.log
