# Session 8, run 49: final tables; benches of both backends with torch eager; Numba-entry tests
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
mkdir -p $OUT/sm $OUT/nm
BENCH_ARGS="--ops layernorm_fwd,layernorm_bwd,rmsnorm_fwd,rmsnorm_bwd,layernorm_fwd_fp8,rmsnorm_fwd_fp8 --dtypes bf16,fp16,fp32 --sizes 1024,4096,8192,12288,16384,32768,65536 --no-liger --no-jit --no-host --time-budget 150 --target-ms 8" OUT=$OUT/nm timeout 175 bash perf/gpu_suite.sh bench > $OUT/nm/console.txt 2>&1
BENCH_ARGS="--ops softmax_fwd,softmax_bwd,masked_softmax_fwd,upper_triang_softmax_fwd --dtypes bf16,fp16,fp32 --sizes 1024,2048,4096,8192,16384,32768,131072 --no-liger --no-jit --no-host --time-budget 120 --target-ms 8" OUT=$OUT/sm timeout 145 bash perf/gpu_suite.sh bench > $OUT/sm/console.txt 2>&1
export PYTHONPATH=/tmp/site:$PWD
timeout 120 python3 -m pytest -q -m gpu -p no:cacheprovider -p xdist -n 12 tests/gpu/test_measured_gpu.py tests/gpu/test_fp8_gpu.py -k "numba" -rfE > $OUT/tests49.log 2>&1
tail -n 2 $OUT/tests49.log
cd $OUT && tar czf run49.tgz sm nm && rm -rf sm nm
