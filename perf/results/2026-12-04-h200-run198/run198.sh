# Session 31, run 198: A/B (NVRTC, two rounds) of the softmax entries moved to the streaming
# kernels on the grid of all rows (run 197's winners, 27 entries at 8192-32768 keys) against HEAD.
. perf/device_env.sh
R=$OUT/r198; mkdir -p $R
cp .exp/run198.sh $R/
ab $R/ab 135 --ops softmax_fwd,masked_softmax_fwd,upper_triang_softmax_fwd,aligned_causal_softmax_fwd,softmax_bwd \
  --backends nvrtc --dtypes bf16,fp16,fp32 --sizes 8192,16384,32768 --time-budget 120
