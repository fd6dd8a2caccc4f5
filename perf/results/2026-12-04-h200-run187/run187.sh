# Session 30, run 187 (uncommitted tree on a4b6617: NVRTC softmax kernels for rows of several
# CTAs built with the count fixed, SOFTMAX_ROW_CTAS, so the column step is a constant; the held
# masked fp32 forward at 131072 keys no longer spills): A/B of the NVRTC softmax rows at 131072
# keys against a4b6617, then the NVRTC softmax, softmax API and fast-path GPU test files.
. perf/device_env.sh
R=$OUT/r187; mkdir -p $R
ab $R/ab 90 --ops softmax_fwd,masked_softmax_fwd,aligned_causal_softmax_fwd,softmax_bwd --backends nvrtc --dtypes bf16,fp16,fp32 --sizes 131072 --time-budget 80
(cd $OUT && tar czf r187a.tgz r187)
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 150 bash perf/gpu_suite.sh tests tests/gpu/test_nvrtc_softmax_gpu.py tests/gpu/test_softmax_api_gpu.py tests/gpu/test_fast_path_gpu.py -rfEs --maxfail=25 -p xdist 2>&1 | tail -4
cd $OUT && rm -f r187a.tgz && tar czf r187.tgz r187 && rm -rf r187
