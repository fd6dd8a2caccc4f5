# Session 42, call 4: the fp16 and fp32 scoreboards (bench.py --full, both backends, torch eager, the same-size stream; one process a dtype), after call 3 (bf16, run401.sh)
. perf/device_env.sh
R=$OUT/r403; mkdir -p $R
cp .exp/run403.sh $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
for DT in fp16 fp32; do
timeout 280 python3 perf/bench.py --out $R/$DT --full --dtypes $DT --no-jit --no-host --target-ms 4 --time-budget 250 > $R/bench_$DT.txt 2>&1
echo "bench $DT rc=$?"
tail -3 $R/bench_$DT.txt
done
date -u
cd $R && tar czf ../r403.tgz . && cd .. && rm -rf r403
