#!/usr/bin/env bash
# Session 7, run 44: the Numba backward's second conversion made opaque to ptxas (words XORed
# with cols >> 31): Numba softmax GPU tests, then the backward bench (both backends, 3 dtypes).
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD NUMBA_NORMS_CACHE_DIR=/tmp/nnc PYTHONUNBUFFERED=1
python3 -m numba_norms info > $OUT/info.txt 2>&1
timeout 120 python3 -m pytest -q -m gpu -p no:cacheprovider -n 12 tests/gpu/test_numba_softmax_gpu.py \
  tests/gpu/test_softmax_api_gpu.py > /tmp/tests.log 2>&1
tail -8 /tmp/tests.log > $OUT/tests.log
timeout 120 python3 perf/bench.py --out /tmp/b --ops softmax_bwd --dtypes bf16,fp16,fp32 \
  --sizes 1024,2048,4096,8192,16384,32768,131072 --no-torch --no-jit --no-host --time-budget 100 \
  --target-ms 15 > /dev/null 2>&1
cp /tmp/b/bench.csv $OUT/bench.csv
