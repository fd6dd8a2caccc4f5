# Session 31, run 190: prototype of a long-row softmax forward holding rows in shared memory
# (TMA bulk copies, NBUF rows in flight a CTA, clusters for rows past one SM), beside the library.
. perf/device_env.sh
R=$OUT/r190; mkdir -p $R
cp .exp/proto_tma.py .exp/run190.sh $R/
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee $R/gpu.txt
timeout 400 python3 .exp/proto_tma.py $R/proto.json 2>&1 | tee $R/proto.log
