#!/usr/bin/env bash
# Session 7, run 38: forward re-sweep (scaled, masked, upper_triang; bf16/fp16/fp32) on the new
# first pass; A/B of the column test (j < n_in everywhere vs only masked) on softmax_fwd.
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD NUMBA_NORMS_CACHE_DIR=/tmp/nnc PYTHONUNBUFFERED=1
python3 -m numba_norms info > $OUT/info.txt 2>&1
rm -rf /tmp/alt; mkdir /tmp/alt; tar -cf - --exclude=./.whl . | tar -xf - -C /tmp/alt
cp .exp/alt/softmax.cu /tmp/alt/numba_norms/backends/nvrtc/softmax.cu
A="--ops softmax_fwd,upper_triang_softmax_fwd --dtypes bf16,fp16 --sizes 1024,2048,4096,8192,16384 --backends nvrtc --no-torch --no-jit --no-host --target-ms 20 --time-budget 100"
for v in new alt new2 alt2; do
  d=$PWD; case $v in alt*) d=/tmp/alt;; esac
  (cd $d && PYTHONPATH=/tmp/site:$d NUMBA_NORMS_CACHE_DIR=/tmp/nnc_${v%2} timeout 120 python3 perf/bench.py --out /tmp/o_$v $A > /dev/null 2>&1)
  cp /tmp/o_$v/bench.csv $OUT/ab_$v.csv
done
timeout 300 python3 perf/tune_softmax.py --out /tmp/tune --ops softmax_fwd masked_softmax_fwd upper_triang_softmax_fwd \
  --dtypes bf16 fp16 fp32 --time-budget 270 > $OUT/tune.log 2>&1
cp /tmp/tune/tune.csv $OUT/tune.csv
