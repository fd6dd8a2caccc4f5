# Session 8, run 48: the fixed measured-entry tests; Numba norm sweep with pipelined candidates
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD NUMBA_NORMS_CACHE_DIR=/tmp/nnc PYTHONUNBUFFERED=1
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -p xdist -n 12 tests/gpu/test_measured_gpu.py tests/gpu/test_fp8_gpu.py tests/gpu/test_numba_softmax_gpu.py -k "numba or own" -rfE > $OUT/tests48.log 2>&1
tail -n 3 $OUT/tests48.log
R=perf/results/2026-11-30-h200-
NREF="${R}run5/tune.csv ${R}run22/sweep/tune.csv ${R}run24/sweep/tune.csv"
timeout 300 python3 perf/tune_norms.py --out $OUT/nb2 --backend numba --refine $NREF --top 6 --ops layernorm_bwd rmsnorm_bwd --dtypes bf16 fp16 fp32 --sizes 1024 12288 16384 32768 4096 8192 65536 --time-budget 270 > $OUT/nb2.log 2>&1
cd $OUT && tar czf run48.tgz nb2 && rm -rf nb2
