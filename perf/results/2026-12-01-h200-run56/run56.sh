# Session 9, run 56: the fast path after the review refactor (outputs given or new through
# helpers): fast-path, out=, torch, API GPU tests; host rows
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
mkdir -p $OUT/host
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -p xdist -n 12 tests/gpu/test_fast_path_gpu.py tests/gpu/test_torch_gpu.py tests/gpu/test_norms_api_gpu.py tests/gpu/test_softmax_api_gpu.py tests/gpu/test_arrays_gpu.py -rfE > $OUT/tests56.log 2>&1
tail -n 3 $OUT/tests56.log
timeout 100 python3 perf/bench.py --out $OUT/host --ops rmsnorm_fwd --sizes 4096 --dtypes bf16 --no-jit --no-liger --time-budget 40 > $OUT/host/console.txt 2>&1
grep -A14 "HOST COST" $OUT/host/console.txt
