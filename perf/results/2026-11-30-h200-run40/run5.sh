#!/usr/bin/env bash
# Session 7, run 40: the softmax benchmark as in run 32 (3 dtypes, 512-131072 keys, torch eager,
# torch.compile at 4096) on the session's final kernels and measured table; first the Numba
# softmax and softmax API GPU tests (the Numba fallback now lowers the cap one CTA at a time).
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD NUMBA_NORMS_CACHE_DIR=/tmp/nnc PYTHONUNBUFFERED=1
python3 -m numba_norms info > $OUT/info.txt 2>&1
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -n 12 tests/gpu/test_numba_softmax_gpu.py \
  tests/gpu/test_softmax_api_gpu.py > /tmp/tests.log 2>&1
tail -8 /tmp/tests.log > $OUT/tests.log
timeout 420 python3 perf/bench.py --out $OUT --ops softmax --dtypes bf16,fp16,fp32 \
  --sizes 512,1024,2048,4096,8192,16384,32768,131072 --compile --compile-sizes 4096 --no-jit --no-host \
  --time-budget 300 --target-ms 20 > /dev/null 2>&1
echo rc=$? > $OUT/rc.txt
rm -f $OUT/jit.csv $OUT/host.csv
