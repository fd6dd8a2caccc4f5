# Session 27, run 167 (tree: 02d368d + the streaming softmax forward, run 166's entries and the
# aligned-causal 131072-key entries): A/B against 02d368d (.exp/old), two rounds; NVRTC 16-bit
# scaled / causal forwards at 16384-131072 keys, fp32 causal at 32768 / 131072, Numba causal 16-bit;
# then the softmax GPU test files (the whole suite passed on 02d368d in run 162).
. perf/device_env.sh
R=$OUT/r167; mkdir -p $R
ab $R/nv 60 --ops softmax_fwd,upper_triang_softmax_fwd,aligned_causal_softmax_fwd --backends nvrtc --dtypes bf16,fp16 --sizes 16384,32768,131072 --time-budget 40
ab $R/nv32 25 --ops upper_triang_softmax_fwd,aligned_causal_softmax_fwd --backends nvrtc --dtypes fp32 --sizes 32768,131072 --time-budget 15
ab $R/nb 55 --ops upper_triang_softmax_fwd,aligned_causal_softmax_fwd --backends numba --dtypes bf16,fp16 --sizes 16384,32768,131072 --time-budget 40
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 150 bash perf/gpu_suite.sh tests tests/gpu/test_nvrtc_softmax_gpu.py tests/gpu/test_numba_softmax_gpu.py tests/gpu/test_softmax_api_gpu.py tests/gpu/test_torch_gpu.py -rfEs --maxfail=25 -p xdist 2>&1 | tail -8
cd $OUT && tar czf r167.tgz r167 && rm -rf r167
