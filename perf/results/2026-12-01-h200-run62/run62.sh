# Session 10, run 62: the final tables (run 60's winners kept per run 61's A/B, Numba-own entries
# where the shared change hurt or helped Numba only): norm backwards 768-8192, 3 dtypes, both
# backends and torch eager; GPU tests of the measured entries and the norm backends
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
mkdir -p $OUT/b
timeout 150 python3 perf/bench.py --out $OUT/b --time-budget 130 --ops layernorm_bwd,rmsnorm_bwd --dtypes bf16,fp16,fp32 --sizes 768,1024,2048,2560,3584,4096,5120,7168,8192 --no-liger --no-jit --no-host --target-ms 5 > $OUT/b/console.txt 2>&1
grep -A12 SUMMARY $OUT/b/console.txt | head -14
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -p xdist -n 12 tests/gpu/test_measured_gpu.py tests/gpu/test_numba_norms_gpu.py tests/gpu/test_nvrtc_norms_gpu.py -rfE > $OUT/tests62.log 2>&1
tail -n 4 $OUT/tests62.log
cd $OUT && tar czf run62.tgz b && rm -rf b
