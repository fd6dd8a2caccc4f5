# Session 42, call 1: the whole GPU suite on efbf864 (host-side changes since the last GPU run;
# every cache misses once: new key digests).
. perf/device_env.sh
R=$OUT; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
GPU_TEST_WORKERS=15 OUT=$R/suite timeout 540 bash perf/gpu_suite.sh tests tests/gpu \
  -rfE --maxfail=40 -p xdist -q 2>&1 | tail -40
rm -f $R/suite/gpu_tests.log
date -u
