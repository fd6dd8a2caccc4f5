# Session 42, call 2: the bf16 scoreboard on the current tree (bench.py --full, every op, both
# backends, torch eager and the same-size stream in one process; host-cost loops; no JIT).
# The last full scoreboard was runs 218-219 (H100).
. perf/device_env.sh
R=$OUT/r401; mkdir -p $R
cp .exp/run401.sh $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
timeout 540 python3 perf/bench.py --out $R/b --full --dtypes bf16 --no-jit --target-ms 4 --time-budget 500 > $R/bench.txt 2>&1
echo "bench rc=$?"
tail -5 $R/bench.txt
date -u
cd $R && tar czf ../r401.tgz . && cd .. && rm -rf r401
