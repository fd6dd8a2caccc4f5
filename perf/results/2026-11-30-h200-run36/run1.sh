#!/usr/bin/env bash
# Session 7, run 36: softmax GPU tests (masked rows heads-fastest), masked forward bench (default
# and heads-first b*h split), and an A/B of cache hints in nvrtc/norms.cuh Pack (base, __ldcs +
# __stcs, __stcs only) on norm and softmax kernels.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD NUMBA_NORMS_CACHE_DIR=/tmp/nnc PYTHONUNBUFFERED=1
python3 -m numba_norms info > $OUT/info.txt 2>&1
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -n 12 tests/gpu/test_nvrtc_softmax_gpu.py \
  tests/gpu/test_numba_softmax_gpu.py tests/gpu/test_softmax_api_gpu.py > /tmp/tests.log 2>&1
tail -25 /tmp/tests.log > $OUT/tests.log
M="--ops masked_softmax_fwd --sizes 1024,2048,4096,8192,16384 --no-jit --no-host --target-ms 20 --time-budget 120"
timeout 150 python3 perf/bench.py --out /tmp/b1 $M --dtypes bf16,fp32 > /dev/null 2>&1; cp /tmp/b1/bench.csv $OUT/masked.csv
timeout 120 python3 perf/bench.py --out /tmp/b2 $M --dtypes bf16 --heads-first > /dev/null 2>&1; cp /tmp/b2/bench.csv $OUT/masked_hf.csv
for v in cs st; do
  rm -rf /tmp/$v; mkdir /tmp/$v; tar -cf - --exclude=./.whl . | tar -xf - -C /tmp/$v
  cp .exp/$v/norms.cuh /tmp/$v/numba_norms/backends/nvrtc/norms.cuh
done
A="--ops layernorm_fwd,rmsnorm_fwd,layernorm_bwd,rmsnorm_bwd,softmax_fwd,softmax_bwd --dtypes bf16 --sizes 4096,8192,16384 --backends nvrtc --no-torch --no-liger --no-jit --no-host --target-ms 20 --time-budget 100"
for v in base cs st base2; do
  d=$PWD; [ -d /tmp/${v} ] && d=/tmp/$v
  (cd $d && PYTHONPATH=/tmp/site:$d NUMBA_NORMS_CACHE_DIR=/tmp/nnc_$v timeout 130 python3 perf/bench.py --out /tmp/o_$v $A > /dev/null 2>&1)
  cp /tmp/o_$v/bench.csv $OUT/ab_$v.csv
done
