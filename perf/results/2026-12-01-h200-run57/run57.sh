# Session 9, run 57: host rows again (run 56's were 20-80% above run 52/55's for torch as well)
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
mkdir -p $OUT/host
for i in 1 2; do
timeout 100 python3 perf/bench.py --out $OUT/host$i --ops rmsnorm_fwd --sizes 4096 --dtypes bf16 --no-jit --no-liger --time-budget 30 > $OUT/host_console$i.txt 2>&1
grep -A14 "HOST COST" $OUT/host_console$i.txt
done
