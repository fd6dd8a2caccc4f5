# Session 18, run 116: the scoreboard refresh, part 3: the fp16 and fp32 softmax family
# (bench.py --full) and the JIT-cost section (fresh processes, cold and disk-cached, both
# backends; not re-measured since runs 11 / 13).
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r116; mkdir -p $R/softmax_fp16 $R/softmax_fp32
export PYTHONPATH=/tmp/site:$PWD
for dt in fp16 fp32; do
  timeout 210 python3 perf/bench.py --out $R/softmax_$dt --full --dtypes $dt --ops softmax --no-jit --no-host --time-budget 195 > $R/softmax_$dt/console.txt 2>&1
  echo "bench softmax $dt rc=$?"; grep "run took" $R/softmax_$dt/console.txt
  sed -n '/^SUMMARY/,$p' $R/softmax_$dt/console.txt | head -9
  grep -E "ERROR|FAIL|Traceback|budget" $R/softmax_$dt/console.txt | head -5
done
mkdir -p $R/jit
timeout 150 python3 perf/bench.py --out $R/jit --quick --ops all --no-host --time-budget 70 > $R/jit/console.txt 2>&1
echo "bench jit rc=$?"; grep "run took" $R/jit/console.txt
sed -n '/^JIT/,/^$/p' $R/jit/console.txt | head -30
cd $OUT && tar czf r116.tgz r116 && rm -rf r116
