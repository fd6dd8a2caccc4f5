# Session 9, run 55: the whole GPU suite on the final tables; norm forwards (FP8 outputs included)
# both backends and torch eager; host rows (out=)
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
mkdir -p $OUT/suite $OUT/nm
GPU_TEST_WORKERS=12 OUT=$OUT/suite timeout 230 bash perf/gpu_suite.sh tests tests/gpu -rfE --maxfail=25 -p xdist > $OUT/tests55.log 2>&1
tail -n 4 $OUT/tests55.log
BENCH_ARGS="--ops layernorm_fwd,rmsnorm_fwd,layernorm_fwd_fp8,rmsnorm_fwd_fp8 --dtypes bf16,fp16,fp32 --sizes 1024,4096,8192,12288,16384,32768,65536 --no-liger --no-jit --time-budget 175 --target-ms 8" OUT=$OUT/nm timeout 215 bash perf/gpu_suite.sh bench > $OUT/nm/console.txt 2>&1
grep -A16 "HOST COST" $OUT/nm/console.txt; grep -A14 "^SUMMARY" $OUT/nm/console.txt
cd $OUT && tar czf run55.tgz suite nm && rm -rf suite nm
