# Session 14, run 90b: the bf16 scoreboard of the softmax family (--full keys 128-131072, both
# backends, torch eager, the stream rows), the host-cost section, and perf/host_parts.py (its
# out= row; the script's stale call fixed).
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r90b; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
timeout 90 python3 perf/host_parts.py --out $R > $R/host_parts.txt 2>&1; echo "host_parts rc=$?"
cat $R/host_parts.txt
timeout 490 python3 perf/bench.py --out $R --full --dtypes bf16 --ops softmax --no-jit --time-budget 460 > $R/console.txt 2>&1
echo "bench rc=$?"
sed -n '/^HOST COST/,/^$/p' $R/console.txt | head -20
sed -n '/^SUMMARY/,$p' $R/console.txt | head -30
grep -E "ERROR|fail" $R/console.txt | head -10
cd $OUT && tar czf r90b.tgz r90b && rm -rf r90b
