# Session 43, call 4: beta's shift -0.f instead of 0.f in the NVRTC forward (the compiler then
# drops the add each packed beta use took: 2040 -> 1920 SASS instructions in bf16 LayerNorm
# 65536): same-run A/B against 7275792 (.exp/old), LayerNorm forwards; then the LayerNorm tests
# of the measured entries and the API on the GPU (outputs must be unchanged).
. perf/device_env.sh
R=$OUT; mkdir -p $R
cp .exp/run504.sh $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
ab $R/ab 100 --ops layernorm_fwd,layernorm_fwd_fp8 --dtypes bf16,fp16 --sizes 1024,4096,8192,16384,65536 --backends nvrtc
rm -rf $R/ab/old1 $R/ab/old2 $R/ab/new1 $R/ab/new2
date -u
timeout 170 python3 -m pytest -q -m gpu -p no:cacheprovider -n 15 -p xdist tests/gpu/test_measured_gpu.py tests/gpu/test_norms_api_gpu.py tests/gpu/test_fp8_gpu.py -k "layernorm" 2>&1 | tail -3
date -u
