#!/usr/bin/env bash
# Session 7, run 39: the whole GPU suite on the session's code, then the softmax bench (bf16,
# 1024-16384 keys, both backends, torch eager).
set -u
export GPU_TEST_WORKERS=12 BENCH_ARGS="--ops softmax --dtypes bf16 --sizes 1024,2048,4096,8192,16384 --no-jit --no-host --target-ms 20 --time-budget 200"
timeout 560 bash perf/gpu_suite.sh all tests/gpu -rfE --maxfail=25 -p xdist > $OUT/suite.log 2>&1
echo rc=$? >> $OUT/suite.log
rm -f $OUT/junit.xml $OUT/jit.csv $OUT/host.csv
