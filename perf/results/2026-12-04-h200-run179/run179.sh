# Session 29, run 179: where the streaming softmax forward at 32768 keys loses (85% of the
# ceiling where the streaming backward runs 93%): ncu of the forward / backward at 32768 and
# 131072 keys (bf16, NVRTC), the masked fp32 131072 forward on both backends (run 177: NVRTC
# 402 us, Numba 354 us, same held shape); the forward's time a row against the row count
# (tail of the persistent grid).
. perf/device_env.sh
R=$OUT/r179; mkdir -p $R
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for sq in 3168 3960 4096 7920; do python3 .exp/prof179.py time fwd bf16 32768 $sq; done 2>&1 | tee $R/rows.txt
for sq in 3168 3960 4096; do python3 .exp/prof179.py time bwd bf16 32768 $sq; done 2>&1 | tee -a $R/rows.txt
MET="dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,lts__t_sectors_srcunit_tex_op_write.sum,sm__inst_executed.sum,smsp__inst_executed_op_mufu.sum"
prof() {  # name args...
  local name=$1; shift
  timeout 90 $NCU --clock-control none -k regex:softmax -s 3 -c 1 --section SpeedOfLight --section MemoryWorkloadAnalysis --section SchedulerStats --section WarpStateStats --section Occupancy --section LaunchStats --metrics $MET python3 .exp/prof179.py ncu "$@" > $R/ncu_$name.txt 2> $R/ncu_$name.err
  echo "$name rc=$? $(grep -E 'Duration|DRAM Throughput|dram__bytes_read.sum |Registers Per' $R/ncu_$name.txt | tr -s ' ' | tr '\n' ';')"
}
prof fwd32k fwd bf16 32768 4096
prof bwd32k bwd bf16 32768 4096
prof fwd128k fwd bf16 131072 1024
prof bwd128k bwd bf16 131072 1024
prof masked128k_fp32 masked fp32 131072 1024
DISABLE_NVRTC=1 prof masked128k_fp32_numba masked fp32 131072 1024
DISABLE_NVRTC=1 python3 .exp/prof179.py time masked fp32 131072 1024 | tee -a $R/rows.txt
python3 .exp/prof179.py time masked fp32 131072 1024 | tee -a $R/rows.txt
cd $OUT && tar czf r179.tgz r179 && rm -rf r179
