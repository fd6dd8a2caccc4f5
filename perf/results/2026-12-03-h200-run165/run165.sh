# Session 27, run 165: timed sweep of the streaming softmax forward (SoftmaxConfig.chunk,
# perf/tune_softmax.py --stream) against the serving entries at 16384 / 32768 / 131072 keys,
# three forward variants (aligned causal shares the upper-triangular entries), three dtypes.
. perf/device_env.sh
R=$OUT/r165; mkdir -p $R
timeout 420 python3 perf/tune_softmax.py --out $R/tune --stream \
  --ops softmax_fwd masked_softmax_fwd upper_triang_softmax_fwd --dtypes bf16 fp16 fp32 \
  --keys 32768 131072 16384 --target-ms 4 --time-budget 380 2>&1 | grep -v "^  " | tail -40
cd $OUT && tar czf r165.tgz r165 && rm -rf r165
