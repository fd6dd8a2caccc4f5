# Session 44, call 7: TE's general entry with the register caps of registry._CAPPED_GENERAL
# (and the forwards' one-CTA band to 28672) at row lengths the sweeps of calls 5-6 did not
# time: same-run A/B against HEAD 5b74f27 (.exp/old), NVRTC, bf16 and fp16, two rounds.
. perf/device_env.sh
R=$OUT; mkdir -p $R; cp .exp/run_c7.sh $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
ab $R/ab 140 --ops layernorm_fwd,rmsnorm_fwd,layernorm_bwd,rmsnorm_bwd,layernorm_fwd_fp8,rmsnorm_fwd_fp8 \
  --dtypes bf16,fp16 --sizes 24832,46336,59648,121344 --backends nvrtc
rm -rf $R/ab/old? $R/ab/new?
grep -il "mismatch\|error\|Traceback" $R/ab/*.txt | head -5
date -u
