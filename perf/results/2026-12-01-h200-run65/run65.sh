# Session 11, run 65: the norm backward's finalize as a programmatic dependent launch (PDL).
# 1) decomposition in one process (main / finalize / both, plain vs PDL), both backends;
# 2) bench A/B: HEAD 4b35291 (.exp/old) vs the working tree, norm backwards bf16, both backends;
# 3) GPU tests of the norms, rtc and torch (graph capture) files.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee $OUT/gpu.txt
PYTHONPATH=/tmp/site:$PWD timeout 150 python3 .exp/decomp65.py 2>&1 | tee $OUT/decomp65.txt
mkdir -p $OUT/a $OUT/b
BA="--ops layernorm_bwd,rmsnorm_bwd --dtypes bf16 --sizes 768,1024,2048,4096,5120,8192 --no-liger --no-jit --no-host --time-budget 80 --target-ms 8"
(cd .exp/old && PYTHONPATH=/tmp/site:$PWD timeout 110 python3 perf/bench.py --out $OUT/a --no-torch $BA > $OUT/a/console.txt 2>&1)
export PYTHONPATH=/tmp/site:$PWD
timeout 130 python3 perf/bench.py --out $OUT/b $BA > $OUT/b/console.txt 2>&1
grep -A30 SUMMARY $OUT/a/console.txt | head -40; grep -A40 SUMMARY $OUT/b/console.txt | head -50
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider -p xdist -n 12 tests/gpu/test_nvrtc_norms_gpu.py tests/gpu/test_numba_norms_gpu.py tests/gpu/test_norms_api_gpu.py tests/gpu/test_fast_path_gpu.py tests/gpu/test_rtc_gpu.py tests/gpu/test_torch_gpu.py -rfE > $OUT/tests65.log 2>&1
tail -n 15 $OUT/tests65.log
