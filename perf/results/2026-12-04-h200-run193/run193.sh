# Session 31, run 193: prototype of a long-row softmax forward holding rows in shared memory
# y stored by TMA bulk copies out of shared memory (in place), pure TMA copies, 4224 rows (32 a SM) against 4096.
. perf/device_env.sh
R=$OUT/r193; mkdir -p $R
cp .exp/proto_tma4.py .exp/run193.sh $R/
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee $R/gpu.txt
timeout 400 python3 .exp/proto_tma4.py $R/proto.json 2>&1 | tee $R/proto.log
