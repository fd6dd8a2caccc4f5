# Session 44, call 6: as call 5 at more bf16 row lengths no tuned shape tiles (22784 / 30976 /
# 37376 / 43264 / 57088: one-CTA shapes and TE's capped; 76608 / 92736 / 112000: TE's capped).
. perf/device_env.sh
R=$OUT; mkdir -p $R; cp .exp/run_c6.sh $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
timeout 540 python3 perf/tune_norms.py --out $R/gen --general \
  --ops layernorm_fwd rmsnorm_fwd layernorm_bwd rmsnorm_bwd --dtypes bf16 \
  --sizes 22784 30976 37376 43264 57088 76608 92736 112000 --top 2 --target-ms 4 \
  --time-budget 500 > $R/gen.txt 2>&1
echo "gen rc=$?"; grep -v "^\s*$" $R/gen.txt | tail -34
date -u
