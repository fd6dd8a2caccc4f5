# Session 11, run 69: host cost of rtc.Launcher's plain / programmatic / cooperative launch paths.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache PYTHONPATH=/tmp/site:$PWD
for k in 1 2 3; do timeout 60 python3 .exp/launch69.py 2>&1 | tee $OUT/launch69_$k.txt; done
