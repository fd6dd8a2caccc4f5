# Session 27, run 166: the run-165 sweep again after the unchecked chunk path (scaled and causal only, 8192 added) (SoftmaxConfig.chunk,
# perf/tune_softmax.py --stream) against the serving entries at 16384 / 32768 / 131072 keys,
# three forward variants (aligned causal shares the upper-triangular entries), three dtypes.
. perf/device_env.sh
R=$OUT/r166; mkdir -p $R
timeout 420 python3 perf/tune_softmax.py --out $R/tune --stream \
  --ops softmax_fwd upper_triang_softmax_fwd --dtypes bf16 fp16 fp32 \
  --keys 32768 131072 16384 8192 --target-ms 4 --time-budget 380 2>&1 | grep -v "^  " | tail -40
cd $OUT && tar czf r166.tgz r166 && rm -rf r166
