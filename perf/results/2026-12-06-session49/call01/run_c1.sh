# Session 49, call 1: a9354fb unchanged. The whole GPU test suite (not run in session 48), then
# the bf16 scoreboard (bench.py --full, kernels only, time-boxed).
. perf/device_env.sh
R=$OUT/c1; mkdir -p $R
cp .exp/run_c1.sh $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
GPU_TEST_WORKERS=15 OUT=$R/suite timeout 300 bash perf/gpu_suite.sh tests tests/gpu -rfE --maxfail=40 -p xdist > $R/suite.txt 2>&1
echo "suite rc=$?"; tail -4 $R/suite.txt; grep FAILED $R/suite.txt | head -20
date -u
left=$((560 - SECONDS - 25))
[ $left -gt 60 ] && timeout $((left + 20)) python3 perf/bench.py --out $R/board --full --dtypes bf16 --no-jit --target-ms 4 --time-budget $left > $R/board.txt 2>&1
echo "board rc=$?"; tail -5 $R/board.txt
date -u
cd $R && tar czf ../c1.tgz . && cd .. && rm -rf c1
