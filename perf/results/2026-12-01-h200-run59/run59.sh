# Session 10, run 59: the finalize spread over 32 x ty threads a 32-column CTA (new) against one
# thread a column (old, HEAD d80adb4 in .exp/old), norm backwards bf16, both backends; GPU tests
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
mkdir -p $OUT/a $OUT/b
BA="--ops layernorm_bwd,rmsnorm_bwd --dtypes bf16 --sizes 768,1024,2048,4096,8192,16384,32768,65536 --no-liger --no-jit --no-host --time-budget 90 --target-ms 8"
(cd .exp/old && PYTHONPATH=/tmp/site:$PWD timeout 120 python3 perf/bench.py --out $OUT/a --no-torch $BA > $OUT/a/console.txt 2>&1)
export PYTHONPATH=/tmp/site:$PWD
timeout 150 python3 perf/bench.py --out $OUT/b $BA > $OUT/b/console.txt 2>&1
grep -A30 SUMMARY $OUT/a/console.txt | head -40; grep -A40 SUMMARY $OUT/b/console.txt | head -50
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider -p xdist -n 12 tests/gpu/test_nvrtc_norms_gpu.py tests/gpu/test_numba_norms_gpu.py tests/gpu/test_norms_api_gpu.py tests/gpu/test_fast_path_gpu.py tests/gpu/test_measured_gpu.py -rfE > $OUT/tests59.log 2>&1
tail -n 15 $OUT/tests59.log
cd $OUT && tar czf run59.tgz a b && rm -rf a b
