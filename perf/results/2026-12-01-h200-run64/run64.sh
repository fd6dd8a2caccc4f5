# Session 10, run 64: norm backwards 12288-65536 on the final commit (the finalize change), 3 dtypes,
# both backends and torch eager
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
mkdir -p $OUT/b
timeout 140 python3 perf/bench.py --out $OUT/b --time-budget 115 --ops layernorm_bwd,rmsnorm_bwd --dtypes bf16,fp16,fp32 --sizes 12288,16384,32768,65536 --no-liger --no-jit --no-host --target-ms 5 > $OUT/b/console.txt 2>&1
grep -A8 SUMMARY $OUT/b/console.txt
