# Session 38, run 223: the whole GPU suite on session 37's last code (58209f1: disk-cache changes,
# dispatch.first_plan / softmax_fallbacks, ops/_scalars) and dispatch.fitted_plan with tests/gpu/test_few_sms_gpu.py.
set -u
R=$OUT/r223; mkdir -p $R
cp .exp/run223.sh $R/
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee $R/gpu.txt
. perf/device_env.sh || exit 1
python3 -c "import numpy, numba, numba_cuda, torch; print(numpy.__version__, numba.__version__, numba_cuda.__version__, torch.__version__)" | tee -a $R/gpu.txt
echo "tree: 1585f66" | tee -a $R/gpu.txt
date -u | tee -a $R/gpu.txt
GPU_TEST_WORKERS=15 OUT=$R/suite timeout 450 bash perf/gpu_suite.sh tests tests/gpu -rfE --maxfail=40 -p xdist -q 2>&1 | tail -40
echo suite_rc=$?
date -u
