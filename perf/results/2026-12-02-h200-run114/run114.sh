# Session 18, run 114: the norm scoreboard refreshed (none since run 90, session 14): bench.py
# --full for the norm ops (LayerNorm / RMSNorm forward and backward, the FP8-output forwards) in
# bf16 and fp16: both backends, torch eager, Liger, the same-size stream; one process per dtype.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r114; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
for dt in bf16 fp16; do
  mkdir -p $R/$dt
  timeout 280 python3 perf/bench.py --out $R/$dt --full --dtypes $dt --ops norms --no-jit --no-host --time-budget 265 > $R/$dt/console.txt 2>&1
  echo "bench $dt rc=$?"; grep "run took" $R/$dt/console.txt
  sed -n '/^SUMMARY/,$p' $R/$dt/console.txt | head -9
  grep -E "ERROR|FAIL|Traceback|budget" $R/$dt/console.txt | head -5
done
cd $OUT && tar czf r114.tgz r114 && rm -rf r114
