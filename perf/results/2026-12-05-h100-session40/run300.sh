# Session 40, calls 1-2: softmax GPU tests on the natural-domain exponent (huge scores included),
# then a same-run A/B of the softmax forwards against e8b3b8b (.exp/base), both backends.
. perf/device_env.sh
R=$OUT; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
GPU_TEST_WORKERS=15 OUT=$R/tests timeout 230 bash perf/gpu_suite.sh tests \
  tests/gpu/test_softmax_api_gpu.py tests/gpu/test_nvrtc_softmax_gpu.py \
  tests/gpu/test_numba_softmax_gpu.py -p xdist -q -rfE --maxfail=30 2>&1 | tail -25
date -u
OLD=.exp/base ROUNDS=2 ab $R/ab 110 --ops softmax_fwd,masked_softmax_fwd,upper_triang_softmax_fwd,aligned_causal_softmax_fwd \
  --backends nvrtc,numba --dtypes bf16,fp32 --sizes 1024,4096,32768,131072 --time-budget 90
date -u
