# Session 43, call 1: the staged norm forward (NormConfig.stage: the next row copied into shared
# memory by cp.async while this one is reduced and written) on the one-CTA forwards whose
# registers hold one row only: same-run A/B against HEAD 65c930e (.exp/old), NVRTC, two rounds;
# then one-CTA general shapes for fp32 rows of 1000 columns (NVRTC sweep).
. perf/device_env.sh
R=$OUT; mkdir -p $R
cp .exp/run502.sh $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
ab $R/ab 150 --ops layernorm_fwd,rmsnorm_fwd,layernorm_fwd_fp8,rmsnorm_fwd_fp8 \
  --dtypes bf16,fp16,fp32 --sizes 32768,65536 --backends nvrtc
grep -i "fail\|error\|mismatch" $R/ab/new1.txt | head -5
date -u
timeout 130 python3 perf/tune_norms.py --out $R/gen_nvrtc --backend nvrtc --general \
  --ops rmsnorm_fwd layernorm_fwd rmsnorm_bwd layernorm_bwd --dtypes fp32 --sizes 1000 \
  --top 2 --target-ms 4 --time-budget 110 > $R/gen_nvrtc.txt 2>&1; echo "gen rc=$?"
tail -3 $R/gen_nvrtc.txt
date -u
