#!/usr/bin/env bash
# Session 7, run 42: the Numba backward pipeline: Numba softmax GPU tests, then the backward
# bench (both backends, 3 dtypes) on the run-41 table.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD NUMBA_NORMS_CACHE_DIR=/tmp/nnc PYTHONUNBUFFERED=1
python3 -m numba_norms info > $OUT/info.txt 2>&1
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -n 12 tests/gpu/test_numba_softmax_gpu.py \
  tests/gpu/test_softmax_api_gpu.py > /tmp/tests.log 2>&1
tail -8 /tmp/tests.log > $OUT/tests.log
timeout 150 python3 perf/bench.py --out /tmp/b --ops softmax_bwd --dtypes bf16,fp16,fp32 \
  --sizes 1024,2048,4096,8192,16384,32768,131072 --no-torch --no-jit --no-host --time-budget 120 \
  --target-ms 20 > /dev/null 2>&1
cp /tmp/b/bench.csv $OUT/bench.csv
