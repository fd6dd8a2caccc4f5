# Session 40, call 4: the softmax forwards' A/B against e8b3b8b (.exp/base) at the sizes and
# dtype calls 1-3 left out (fp16 everywhere; bf16 and fp32 at 2048, 8192, 16384 keys).
. perf/device_env.sh
R=$OUT; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
OLD=.exp/base ROUNDS=1 ab $R/ab 130 --ops softmax_fwd,masked_softmax_fwd,upper_triang_softmax_fwd,aligned_causal_softmax_fwd \
  --backends nvrtc,numba --dtypes fp16 --sizes 1024,4096,32768,131072 --time-budget 100
OLD=.exp/base ROUNDS=1 ab $R/ab2 130 --ops softmax_fwd,masked_softmax_fwd,upper_triang_softmax_fwd,aligned_causal_softmax_fwd \
  --backends nvrtc,numba --dtypes bf16,fp32 --sizes 2048,8192,16384 --time-budget 100
rm -rf $R/ab/old* $R/ab/new2 $R/ab2/old* $R/ab2/new2 $R/ab/*/host.csv $R/ab/*/jit.csv $R/ab2/*/host.csv $R/ab2/*/jit.csv
date -u
