#!/usr/bin/env bash
# Session 7, run 43: the whole GPU suite on the final code (softmax backward pipeline on NVRTC,
# the run-41 backward table), then the softmax bench as in run 40 (3 dtypes, torch eager,
# torch.compile at 4096).
set -u
export GPU_TEST_WORKERS=12 BENCH_ARGS="--ops softmax --dtypes bf16,fp16,fp32 --sizes 512,1024,2048,4096,8192,16384,32768,131072 --compile --compile-sizes 4096 --no-jit --no-host --time-budget 300 --target-ms 20"
timeout 560 bash perf/gpu_suite.sh all tests/gpu -rfE --maxfail=25 -p xdist > $OUT/suite.log 2>&1
echo rc=$? >> $OUT/suite.log
rm -f $OUT/junit.xml $OUT/jit.csv $OUT/host.csv
