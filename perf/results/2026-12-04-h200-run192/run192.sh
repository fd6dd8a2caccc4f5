# Session 31, run 192: prototype of a long-row softmax forward holding rows in shared memory
# DRAM locality: bulk copies in 8 pieces with the piece order and the store order rotated by row, rows in blocks per CTA.
. perf/device_env.sh
R=$OUT/r192; mkdir -p $R
cp .exp/proto_tma3.py .exp/run192.sh $R/
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee $R/gpu.txt
timeout 400 python3 .exp/proto_tma3.py $R/proto.json 2>&1 | tee $R/proto.log
