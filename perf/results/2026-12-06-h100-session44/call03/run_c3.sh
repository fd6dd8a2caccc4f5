# Session 44, call 3: the NVRTC sweep of every bf16 LayerNorm forward shape at 65536 (with the
# pipeline), the new 2-CTA entry timed as the bar.
. perf/device_env.sh
R=$OUT; mkdir -p $R; cp .exp/run_c3.sh $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
timeout 230 python3 perf/tune_norms.py --out $R/tune --ops layernorm_fwd --dtypes bf16 \
  --sizes 65536 --shape-prefetch --top 3 --target-ms 4 --time-budget 200 > $R/tune.txt 2>&1
echo "tune rc=$?"; tail -8 $R/tune.txt
date -u
