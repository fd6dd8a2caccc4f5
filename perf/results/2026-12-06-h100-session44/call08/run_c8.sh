# Session 44, call 8: the whole GPU suite on the session's tree.
. perf/device_env.sh
R=$OUT; mkdir -p $R; cp .exp/run_c8.sh $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
GPU_TEST_WORKERS=15 OUT=$R/suite timeout 470 bash perf/gpu_suite.sh tests tests/gpu \
  -rfE --maxfail=40 -p xdist 2>&1 | tail -15
rm -f $R/suite/gpu_tests.log
date -u
