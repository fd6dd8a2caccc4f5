# Session 26, run 160 (tree: 093cfcc + generated LayerNorm forwards pipelined past 32 elements
# where 4 registers an element fit; _thread_registers unchanged): (1) A/B against 093cfcc, two
# rounds, at changed sizes run 159 did not time (3-15 warps, 4- and 8-byte vectors), fp16 and
# FP8 outputs, Numba; (2) the whole GPU suite.
. perf/device_env.sh
R=$OUT/r160; mkdir -p $R
ab $R/nv 80 --ops layernorm_fwd --backends nvrtc --dtypes bf16 --sizes 4224,4992,5440,5952,7040,8064,9280,10368,11200,12992,13248,15552,15808,16320 --time-budget 70
ab $R/nv2 60 --ops layernorm_fwd,layernorm_fwd_fp8 --backends nvrtc --dtypes fp16,bf16 --sizes 6400,10368,12544 --time-budget 50
ab $R/nb 100 --ops layernorm_fwd --backends numba --dtypes bf16 --sizes 4992,8960,11520,14080 --time-budget 90
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 300 bash perf/gpu_suite.sh tests tests/gpu -rfEs --maxfail=25 -p xdist 2>&1 | tail -4
cd $OUT && tar czf r160.tgz r160 && rm -rf r160
