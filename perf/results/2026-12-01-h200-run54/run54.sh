# Session 9, run 54: fp16->fp8 / fp32->fp8 forwards: A (current table), the run-53 NVRTC winners
# merged, Numba's own sweep on them (NVRTC's best shapes), B (both tables); GPU tests
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
mkdir -p $OUT/a $OUT/b $OUT/nb
BA="--ops layernorm_fwd_fp8,rmsnorm_fwd_fp8 --dtypes fp16,fp32 --sizes 4096,8192,12288,16384,32768,65536 --no-torch --no-liger --no-jit --no-host --time-budget 80 --target-ms 8"
timeout 110 python3 perf/bench.py --out $OUT/a $BA > $OUT/a/console.txt 2>&1
cp .exp/measured_norms_new2.json numba_norms/data/measured_norms.json
timeout 200 python3 perf/tune_norms.py --out $OUT/nb --backend numba --refine perf/results/2026-12-01-h200-run53/tune_norms_fp8_nvrtc.csv --top 4 --ops layernorm_fwd rmsnorm_fwd --dtypes fp16-fp8 fp32-fp8 --sizes 16384 32768 65536 12288 8192 4096 --time-budget 170 > $OUT/nb.log 2>&1
tail -n 26 $OUT/nb.log
[ -f $OUT/nb/measured_norms_numba.json ] && python3 perf/merge_measured.py $OUT/nb/measured_norms_numba.json --run perf/results/2026-12-01-h200-run54 --table numba_norms/data/measured_norms_numba.json
timeout 110 python3 perf/bench.py --out $OUT/b $BA > $OUT/b/console.txt 2>&1
cp numba_norms/data/measured_norms_numba.json $OUT/measured_norms_numba_after.json
timeout 120 python3 -m pytest -q -m gpu -p no:cacheprovider -p xdist -n 12 tests/gpu/test_measured_gpu.py tests/gpu/test_fp8_gpu.py -rfE > $OUT/tests54.log 2>&1
tail -n 3 $OUT/tests54.log
cd $OUT && tar czf run54.tgz a b nb && rm -rf a b nb
