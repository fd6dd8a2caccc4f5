# Session 31, run 194: prototype of a long-row softmax forward holding rows in shared memory
# slices interleaved over the cluster (pieces round-robin over the CTAs: the cluster reads one window of the row at a time).
. perf/device_env.sh
R=$OUT/r194; mkdir -p $R
cp .exp/proto_tma5.py .exp/run194.sh $R/
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee $R/gpu.txt
timeout 400 python3 .exp/proto_tma5.py $R/proto.json 2>&1 | tee $R/proto.log
