#!/usr/bin/env bash
# Session 7, run 37: softmax GPU tests after the masked first pass change (keep from mask words,
# n_in compares), masked forward re-sweep (3 dtypes), softmax bench bf16 (old measured table).
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD NUMBA_NORMS_CACHE_DIR=/tmp/nnc PYTHONUNBUFFERED=1
python3 -m numba_norms info > $OUT/info.txt 2>&1
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -n 12 tests/gpu/test_nvrtc_softmax_gpu.py \
  tests/gpu/test_numba_softmax_gpu.py tests/gpu/test_softmax_api_gpu.py > /tmp/tests.log 2>&1
tail -30 /tmp/tests.log > $OUT/tests.log
timeout 170 python3 perf/bench.py --out /tmp/b1 --ops softmax --dtypes bf16 --sizes 1024,2048,4096,8192,16384 \
  --no-jit --no-host --target-ms 20 --time-budget 150 > /dev/null 2>&1; cp /tmp/b1/bench.csv $OUT/bench.csv
timeout 270 python3 perf/tune_softmax.py --out /tmp/tune --ops masked_softmax_fwd --dtypes bf16 fp16 fp32 \
  --time-budget 240 > $OUT/tune.log 2>&1
cp /tmp/tune/tune.csv $OUT/tune.csv
