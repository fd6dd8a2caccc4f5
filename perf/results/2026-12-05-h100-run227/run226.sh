# Session 38, run 226 (two GPUs): calls on tensors of cuda:1 while cuda:0 is current: the new
# tests (tests/gpu/test_two_gpus_gpu.py, the 2-GPU arrays test), then .exp/two_gpus.py on the
# old tree (4c856c9, .exp/old) and on the new one.
set -u
R=$OUT/r226; mkdir -p $R
cp .exp/run226.sh .exp/two_gpus.py $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
. perf/device_env.sh || exit 1
date -u
timeout 300 python3 -m pytest -q -p xdist -n 4 tests/gpu/test_two_gpus_gpu.py tests/gpu/test_arrays_gpu.py tests/gpu/test_fast_path_gpu.py -rfE 2>&1 | tail -15
echo "--- old tree"
PYTHONPATH=$PWD/.exp/old:$PYTHONPATH timeout 120 python3 .exp/two_gpus.py 2>&1 | tail -8
echo "--- new tree"
timeout 120 python3 .exp/two_gpus.py 2>&1 | tail -8
date -u
