# Session 32, run 208: the held-row softmax forward prototype (.exp/proto208.py) at bf16 32768
# keys on a grid of all rows: the row held in registers, in shared memory by plain loads, or in
# shared memory by one TMA bulk copy (run 196's form), beside the library and a same-size copy_.
. perf/device_env.sh
R=$OUT/r208; mkdir -p $R
cp .exp/run208.sh .exp/proto208.py $R/
timeout 200 python3 .exp/proto208.py 2>&1 | tee $R/proto.log | tail -50
