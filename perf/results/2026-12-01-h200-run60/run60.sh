# Session 10, run 60: GPU norm tests with the fixed Numba finalize; Numba A/B (old finalize in
# .exp/old vs new), norm backwards bf16; backward re-sweep 768-8192 (the finalize no longer
# penalises many partial rows)
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
mkdir -p $OUT/a $OUT/b $OUT/sweep
export PYTHONPATH=/tmp/site:$PWD
timeout 140 python3 -m pytest -q -m gpu -p no:cacheprovider -p xdist -n 12 tests/gpu/test_nvrtc_norms_gpu.py tests/gpu/test_numba_norms_gpu.py tests/gpu/test_norms_api_gpu.py tests/gpu/test_fast_path_gpu.py tests/gpu/test_measured_gpu.py -rfE > $OUT/tests60.log 2>&1
tail -n 8 $OUT/tests60.log
timeout 290 python3 perf/tune_norms.py --out $OUT/sweep --ops layernorm_bwd rmsnorm_bwd --dtypes bf16 fp16 fp32 --sizes 768 1024 2048 2560 3584 4096 5120 7168 8192 --time-budget 250 > $OUT/sweep.txt 2>&1
grep -E "baseline|winners" $OUT/sweep.txt | cut -c1-150
BA="--ops layernorm_bwd,rmsnorm_bwd --dtypes bf16 --sizes 768,1024,2048,4096,8192 --no-liger --no-jit --no-host --no-torch --time-budget 40 --target-ms 6"
(cd .exp/old && PYTHONPATH=/tmp/site:$PWD timeout 60 python3 perf/bench.py --out $OUT/a $BA > $OUT/a/console.txt 2>&1)
timeout 60 python3 perf/bench.py --out $OUT/b $BA > $OUT/b/console.txt 2>&1
grep -A5 SUMMARY $OUT/a/console.txt; grep -A5 SUMMARY $OUT/b/console.txt
cd $OUT && tar czf run60.tgz a b sweep sweep.txt && rm -rf a b sweep
