# Session 8, run 47: whole GPU suite, then softmax and norm benchmarks (both backends, no torch)
export GPU_TEST_WORKERS=12
timeout 225 bash perf/gpu_suite.sh tests tests/gpu -rfE --maxfail=25 -p xdist
mkdir -p $OUT/sm $OUT/nm
BENCH_ARGS="--ops softmax_fwd,softmax_bwd,masked_softmax_fwd,upper_triang_softmax_fwd --dtypes bf16,fp16,fp32 --sizes 1024,2048,4096,8192,16384,32768,131072 --no-torch --no-liger --no-jit --no-host --time-budget 135 --target-ms 8" OUT=$OUT/sm timeout 160 bash perf/gpu_suite.sh bench > $OUT/sm/console.txt 2>&1
BENCH_ARGS="--ops layernorm_fwd,layernorm_bwd,rmsnorm_fwd,rmsnorm_bwd,layernorm_fwd_fp8,rmsnorm_fwd_fp8 --dtypes bf16,fp16,fp32 --sizes 1024,4096,8192,12288,16384,32768,65536 --no-torch --no-liger --no-jit --no-host --time-budget 135 --target-ms 8" OUT=$OUT/nm timeout 160 bash perf/gpu_suite.sh bench > $OUT/nm/console.txt 2>&1
cd $OUT && tar czf bench47.tgz sm nm && rm -rf sm nm
