# Session 19, run 125: ncu of the FP8-output LayerNorm forward (bf16 -> e4m3, 16384 x 8192) on
# both backends: the NVRTC kernel ran 1.29x slower than the Numba one of the same plan (run 114).
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r125; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $NCU"
python3 .exp/prof125.py 50 2>&1 | tail -1
DISABLE_NVRTC=1 python3 .exp/prof125.py 50 2>&1 | tail -1
for be in nvrtc numba; do
  if [ $be = numba ]; then export DISABLE_NVRTC=1; fi
  timeout 100 $NCU --clock-control none -k regex:norm_fwd -s 3 -c 1 --set full python3 .exp/prof125.py 1 > $R/ncu_$be.txt 2>&1
  echo "$be ncu rc=$?"
done
for be in nvrtc numba; do
  grep -E "Duration|DRAM Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Issued Warp|No Eligible|Eligible Warps|Active Warps Per|Block Size|Grid Size|L1/TEX Hit|L2 Hit|Executed Instructions  |Stall|One or More" $R/ncu_$be.txt | head -40 | sed "s/^/$be /"
done
cd $OUT && tar czf r125.tgz r125 && rm -rf r125
