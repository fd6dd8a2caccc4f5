# Session 38, run 228: host cost per call (bench.py host rows: torch eager, nvrtc, nvrtc+out;
# rows 1 / 8 / 64 x 4096 bf16, 2000 calls) of the old tree (4c856c9, .exp/old) and the new
# (965e8d5), alternated twice: run 227's host_parts put the new whole call at 16.7-16.9 us
# against the old's 25.4-27.4.
set -u
R=$OUT/r228; mkdir -p $R
cp .exp/run228.sh $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
. perf/device_env.sh || exit 1
date -u
A="--ops layernorm_fwd --dtypes bf16 --sizes 4096 --backends nvrtc --no-torch --no-jit --no-stream --no-liger --target-ms 2"
for round in 1 2; do
  for tree in old new; do
    if [ $tree = old ]; then s=.exp/old/perf/bench.py; else s=perf/bench.py; fi
    echo "--- $tree round $round"
    timeout 100 python3 $s --out $R/${tree}_$round $A 2>&1 | grep -A14 "HOST COST"
  done
done
date -u
