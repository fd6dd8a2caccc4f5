# Session 23, run 146: the bf16 norm scoreboard after runs 142-145's table changes: bench.py over
# the norm sizes (--full's), NVRTC beside torch eager, Liger-Kernel and the same-size
# stream, one process.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r146; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
timeout 500 python3 perf/bench.py --out $R/b --full --ops norms --dtypes bf16 --backends nvrtc --no-jit --no-host --target-ms 4 --time-budget 420 > $R/b.txt 2>&1
echo "bench rc=$?"; sed -n '/^SUMMARY/,$p' $R/b.txt | head -40
cd $OUT && tar czf r146.tgz r146 && rm -rf r146
