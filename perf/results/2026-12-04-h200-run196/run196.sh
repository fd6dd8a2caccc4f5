# Session 31, run 196: prototype of a long-row softmax forward holding rows in shared memory
# a grid of all rows (no persistence) and a plain ld/st row copy without shared memory, persistent or a CTA a row.
. perf/device_env.sh
R=$OUT/r196; mkdir -p $R
cp .exp/proto_tma6.py .exp/run196.sh $R/
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee $R/gpu.txt
timeout 400 python3 .exp/proto_tma6.py $R/proto.json 2>&1 | tee $R/proto.log
