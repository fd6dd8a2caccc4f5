# Session 38, run 227: the whole GPU suite on 965e8d5 (the device guard in every launch, the
# input checks, the few-SM test fixed), then the guard's host cost: its check alone, and
# perf/host_parts.py on the old tree (4c856c9) and the new, alternated twice.
set -u
R=$OUT/r227; mkdir -p $R
cp .exp/run227.sh .exp/ctxcost.py $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
. perf/device_env.sh || exit 1
echo "tree: 965e8d5" | tee -a $R/gpu.txt
date -u
GPU_TEST_WORKERS=15 OUT=$R/suite timeout 380 bash perf/gpu_suite.sh tests tests/gpu -rfE --maxfail=40 -p xdist -q 2>&1 | tail -12
echo suite_rc=$?
date -u
timeout 30 python3 .exp/ctxcost.py 2>&1 | tail -3
for round in 1 2; do
  for tree in old new; do
    if [ $tree = old ]; then s=.exp/old/perf/host_parts.py; else s=perf/host_parts.py; fi
    echo "--- host_parts $tree round $round"
    timeout 40 python3 $s --repeats 30 --out $R/hp_${tree}_$round 2>&1 | tail -12
  done
done
date -u
