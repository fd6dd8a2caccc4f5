# Session 9, run 52: A/B of the run-51 forward entries (current table, then the candidate table),
# both backends; GPU tests of the measured entries with the candidate table; host cost (out=)
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
mkdir -p $OUT/a $OUT/b $OUT/host
BA="--ops layernorm_fwd,rmsnorm_fwd,layernorm_fwd_fp8,rmsnorm_fwd_fp8 --dtypes bf16,fp16,fp32 --sizes 32768,65536 --no-torch --no-liger --no-jit --no-host --time-budget 75 --target-ms 8"
timeout 100 python3 perf/bench.py --out $OUT/a $BA > $OUT/a/console.txt 2>&1
cp .exp/measured_norms_new.json numba_norms/data/measured_norms.json
timeout 100 python3 perf/bench.py --out $OUT/b $BA > $OUT/b/console.txt 2>&1
grep -A40 SUMMARY $OUT/a/console.txt | head -12; grep -A40 SUMMARY $OUT/b/console.txt | head -12
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -p xdist -n 12 tests/gpu/test_measured_gpu.py tests/gpu/test_fp8_gpu.py tests/gpu/test_fast_path_gpu.py -rfE > $OUT/tests52.log 2>&1
tail -n 3 $OUT/tests52.log
timeout 100 python3 perf/bench.py --out $OUT/host --ops rmsnorm_fwd --sizes 4096 --dtypes bf16 --no-jit --no-liger --time-budget 40 > $OUT/host/console.txt 2>&1
grep -A14 "HOST COST" $OUT/host/console.txt
cd $OUT && tar czf run52.tgz a b host && rm -rf a b host
