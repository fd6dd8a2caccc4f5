# A later call (session 59 wrote it): ncu of layernorm_bwd bf16 5003 (odd rows, one-element
# accesses) on each backend. Session 59 ran the same 1 x 16 pipelined entry at 277.5 us on
# NVRTC and 706.6 us on Numba (dev-box ptxas: 117 / 128 registers, Numba 24 B of spills; without
# the pipeline Numba 113, no spills). Run from the repository root with carry [".whl"]:
#   bash perf/results/2026-12-08-session59/call5.sh
. perf/device_env.sh
S=perf/results/2026-12-08-session59
R=$OUT/c5; mkdir -p $R
cp $S/call5.sh $R/call5.sh.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
git log --oneline -1 > $R/tree.txt
P=perf/results/2026-12-07-session56/call1/prof56.py
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for be in nvrtc numba; do
  env=""; [ $be = numba ] && env="DISABLE_NVRTC=1"
  env $env python3 $P layernorm_bwd 5003 20 2>&1 | tail -1 | tee $R/time_$be.txt
  env $env timeout 90 $NCU --clock-control none -k regex:norm_bwd -s 6 -c 1 --set full \
    --import-source no -o $R/ln5003_$be python3 $P layernorm_bwd 5003 1 > $R/ncu_$be.log 2>&1
  echo "$be ncu rc=$? at $SECONDS s"
  $NCU -i $R/ln5003_$be.ncu-rep --page details > $R/det_$be.txt 2>&1
  $NCU -i $R/ln5003_$be.ncu-rep --page source --print-source sass --csv > $R/src_$be.csv 2>&1
  gzip $R/src_$be.csv; rm -f $R/ln5003_$be.ncu-rep
done
grep -h -E "^  [a-z_]+norm_bwd|Duration|Registers Per|Executed Instructions  |Issued Warp Per|Achieved Occupancy|DRAM Throughput|L1/TEX Hit|Local|Grid Size|Block Size" $R/det_*.txt | head -60
