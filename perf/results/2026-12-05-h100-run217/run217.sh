set -u
R=$OUT
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee $R/gpu.txt
. perf/device_env.sh || exit 1
python3 -c "import numpy, numba, numba_cuda, torch; print(numpy.__version__, numba.__version__, numba_cuda.__version__, torch.__version__)" | tee -a $R/gpu.txt
date -u | tee -a $R/gpu.txt
GPU_TEST_WORKERS=15 OUT=$R/suite timeout 420 bash perf/gpu_suite.sh tests tests/gpu -rfE --maxfail=40 -p xdist -q
echo suite_rc=$?
date -u
