# Session 18, run 115: the scoreboard refresh, part 2: fp32 norm ops (bench.py --full, as run
# 114) and the bf16 softmax family (--full keys 128-131072) with the host-cost section.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r115; mkdir -p $R/fp32 $R/softmax_bf16
export PYTHONPATH=/tmp/site:$PWD
timeout 280 python3 perf/bench.py --out $R/fp32 --full --dtypes fp32 --ops norms --no-jit --no-host --time-budget 265 > $R/fp32/console.txt 2>&1
echo "bench fp32 rc=$?"; grep "run took" $R/fp32/console.txt
sed -n '/^SUMMARY/,$p' $R/fp32/console.txt | head -9
grep -E "ERROR|FAIL|Traceback|budget" $R/fp32/console.txt | head -5
timeout 250 python3 perf/bench.py --out $R/softmax_bf16 --full --dtypes bf16 --ops softmax --no-jit --time-budget 235 > $R/softmax_bf16/console.txt 2>&1
echo "bench softmax bf16 rc=$?"; grep "run took" $R/softmax_bf16/console.txt
sed -n '/^HOST COST/,/^$/p' $R/softmax_bf16/console.txt | head -20
sed -n '/^SUMMARY/,$p' $R/softmax_bf16/console.txt | head -9
grep -E "ERROR|FAIL|Traceback|budget" $R/softmax_bf16/console.txt | head -5
cd $OUT && tar czf r115.tgz r115 && rm -rf r115
