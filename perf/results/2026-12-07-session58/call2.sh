# Session 58's second GPU call: the whole GPU suite on this tree (session 57's lean pipeline
# and its GPU test included), then the fp32 norms beside torch if call 1 did not reach them.
# Run from the repository root on the device machine with carry [".whl"]:
#   bash perf/results/2026-12-07-session58/call2.sh
. perf/device_env.sh
R=$OUT/c2; mkdir -p $R
cp perf/results/2026-12-07-session58/call2.sh $R/call2.sh.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
GPU_TEST_WORKERS=15 OUT=$R/suite timeout 330 bash perf/gpu_suite.sh tests tests tests/gpu \
  -rfE --maxfail=40 -p xdist 2>&1 | tail -15
if [ -n "${FP32:-}" ]; then
  timeout 200 python3 perf/bench.py --out $R/fp32 \
    --ops layernorm_bwd,rmsnorm_bwd,layernorm_fwd,rmsnorm_fwd --dtypes fp32 \
    --backends nvrtc,numba --sizes 4096,4104,8192,12296 --no-stream --no-jit --no-host \
    --no-liger --target-ms 4 --time-budget 170 > $R/fp32.log 2>&1
  tail -40 $R/fp32/bench.txt 2>/dev/null
fi
