# Session 26, run 161 (tree: 275ae22 + generated 16-bit forwards take narrower vectors where the
# widest would run without the pipeline): A/B against 275ae22 (.exp/old), two rounds, NVRTC bf16
# / fp16 / FP8 outputs and Numba at 25088; then the generated-entry GPU tests.
. perf/device_env.sh
R=$OUT/r161; mkdir -p $R
ab $R/nv 60 --ops layernorm_fwd --backends nvrtc --dtypes bf16 --sizes 4992,17280,17920,19712,21632,23296,25088,26880,28800 --time-budget 50
ab $R/nv2 40 --ops layernorm_fwd,layernorm_fwd_fp8 --backends nvrtc --dtypes fp16,bf16 --sizes 19712,25088 --time-budget 30
ab $R/nb 60 --ops layernorm_fwd --backends numba --dtypes bf16 --sizes 25088 --time-budget 50
OUT=$R/suite timeout 100 bash perf/gpu_suite.sh tests tests/gpu/test_measured_gpu.py -k generated -rfEs 2>&1 | tail -3
cd $OUT && tar czf r161.tgz r161 && rm -rf r161
