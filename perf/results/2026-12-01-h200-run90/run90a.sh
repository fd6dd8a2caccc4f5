# Session 14, run 90a: the bf16 scoreboard of the norms: bench.py --full shapes (768-65536 and
# the odd sizes), both backends, torch eager, and the new per-shape stream rows (torch clone /
# add of the same tensors: the ceiling of a kernel of that size).
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r90a; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
timeout 575 python3 perf/bench.py --out $R --full --dtypes bf16 --ops layernorm_fwd,layernorm_bwd,rmsnorm_fwd,rmsnorm_bwd --no-jit --no-host --time-budget 540 > $R/console.txt 2>&1
echo "bench rc=$?"
sed -n '/^SUMMARY/,$p' $R/console.txt | head -30
grep -E "ERROR|fail" $R/console.txt | head -10
cd $OUT && tar czf r90a.tgz r90a && rm -rf r90a
