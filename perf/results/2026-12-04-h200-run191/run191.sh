# Session 31, run 191: prototype of a long-row softmax forward holding rows in shared memory
# diagnostics: copy mode, no-MUFU mode, same-size copy_, several CTAs an SM with one buffer each.
. perf/device_env.sh
R=$OUT/r191; mkdir -p $R
cp .exp/proto_tma2.py .exp/run191.sh $R/
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee $R/gpu.txt
timeout 400 python3 .exp/proto_tma2.py $R/proto.json 2>&1 | tee $R/proto.log
