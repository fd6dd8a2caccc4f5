# Session 45, call 3: the LayerNorm general forward with shared warp counts (not for one warp a
# row) and layernorm_fwd's capped general entry at 8 CTAs an SM (16-bit output; FP8 keeps 3):
# same-run A/B against HEAD 8cb7abf (.exp/old), NVRTC, two rounds; then the affected GPU tests.
. perf/device_env.sh
R=$OUT; mkdir -p $R; cp .exp/run_c3.sh $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
ab $R/ab 150 --ops layernorm_fwd,layernorm_fwd_fp8 --dtypes bf16,fp16 \
  --sizes 5003,24832,40704,46336,59648,92736,121344 --backends nvrtc
ab $R/ab2 60 --ops layernorm_fwd,layernorm_fwd_fp8 --dtypes fp32 --sizes 1000,5003,12289 \
  --backends nvrtc
rm -rf $R/ab*/old? $R/ab*/new?
grep -il "mismatch\|error\|Traceback" $R/ab*/*.txt | head -5
tar czf $R/ab_txt.tgz $R/ab*/*.txt 2>/dev/null; rm -f $R/ab*/*.txt
date -u
timeout 200 python3 -m pytest -q -m gpu tests/gpu/test_measured_gpu.py tests/gpu/test_nvrtc_norms_gpu.py \
  -p xdist -n 8 -rfE 2>&1 | tail -6
date -u
