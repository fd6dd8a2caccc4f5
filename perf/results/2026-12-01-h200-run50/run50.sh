# Session 9, run 50: NVRTC timing of Numba's fastest forward shapes (16384-65536); the whole GPU
# suite (out= tests included); host cost with out=
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
mkdir -p $OUT/nvf $OUT/host
timeout 170 python3 perf/tune_norms.py --out $OUT/nvf --backend nvrtc --refine perf/results/2026-11-30-h200-run46/tune_norms_fwd_numba.csv --top 4 --ops layernorm_fwd rmsnorm_fwd --dtypes bf16 fp16 fp32 bf16-fp8 --sizes 16384 32768 65536 --time-budget 150 > $OUT/nvf.log 2>&1
tail -n 30 $OUT/nvf.log
GPU_TEST_WORKERS=12 OUT=$OUT/suite timeout 230 bash perf/gpu_suite.sh tests tests/gpu -rfE --maxfail=25 -p xdist > $OUT/tests50.log 2>&1
tail -n 15 $OUT/tests50.log
timeout 100 python3 perf/bench.py --out $OUT/host --ops rmsnorm_fwd --sizes 4096 --dtypes bf16 --no-jit --no-liger --time-budget 40 > $OUT/host/console.txt 2>&1
tail -n 20 $OUT/host/console.txt
cd $OUT && tar czf run50.tgz nvf host suite && rm -rf nvf host suite
