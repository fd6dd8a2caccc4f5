# Session 31, run 199: A/B (Numba, two rounds) of the softmax entries moved to the streaming
# kernels on the grid of all rows (run 197's winners; the Numba path shares them) against HEAD.
. perf/device_env.sh
R=$OUT/r199; mkdir -p $R
cp .exp/run199.sh $R/
ab $R/ab 140 --ops softmax_fwd,masked_softmax_fwd,upper_triang_softmax_fwd,aligned_causal_softmax_fwd,softmax_bwd \
  --backends numba --dtypes bf16,fp16,fp32 --sizes 8192,16384,32768 --time-budget 125
