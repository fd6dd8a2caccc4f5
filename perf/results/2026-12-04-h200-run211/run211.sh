. perf/device_env.sh
R=$OUT/r211; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/gpu.txt
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 330 bash perf/gpu_suite.sh tests tests/gpu -rfEs --maxfail=25 -p xdist > $R/suite.log 2>&1
tail -5 $R/suite.log
cd $R && tar czf ../r211.tgz . && cd .. && rm -rf r211
