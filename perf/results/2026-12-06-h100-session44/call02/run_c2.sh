# Session 44, call 2: bf16 LayerNorm forward 65536 on 2 CTAs of 1 x 16 warps with the pipeline
# (shared table; Numba keeps 1 x 32): same-run A/B against HEAD 5b74f27 (.exp/old) at 65536 and
# at generated neighbours whose selection moves with it, both backends, two rounds; then the
# NVRTC sweep of every shape at 65536 (with the pipeline) against the new entry.
. perf/device_env.sh
R=$OUT; mkdir -p $R; cp .exp/run_c2.sh $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
ab $R/ab 140 --ops layernorm_fwd --dtypes bf16 \
  --sizes 65536,53248,57344,61440,69632,73728,81920,86016,98304,102400 --backends nvrtc,numba
grep -il "mismatch\|error" $R/ab/*.txt | head -5
date -u
