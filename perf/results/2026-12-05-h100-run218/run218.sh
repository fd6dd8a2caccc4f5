# Session 37, run 218: the bf16 scoreboard on the current tree (none since run 146 for the norms,
# run 206 for part of the softmax): bench.py --full, every op, both backends, torch eager and the
# same-size stream in one process; host-cost loops; no JIT section.
. perf/device_env.sh
R=$OUT/r218; mkdir -p $R
cp .exp/run218.sh $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
timeout 540 python3 perf/bench.py --out $R/b --full --dtypes bf16 --no-jit --target-ms 4 --time-budget 500 > $R/bench.txt 2>&1
echo "bench rc=$?"
tail -5 $R/bench.txt
date -u
cd $R && tar czf ../r218.tgz . && cd .. && rm -rf r218
