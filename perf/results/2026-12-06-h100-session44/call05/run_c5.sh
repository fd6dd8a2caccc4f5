# Session 44, call 5: one-CTA general shapes (16-byte vectors) for bf16 rows of 26368 / 50432 /
# 62208 columns (vector multiples no tuned shape tiles: TE's several-CTA general entries serve
# them now), every norm op, NVRTC sweep (`tune_norms.py --general`), rows 16384.
. perf/device_env.sh
R=$OUT; mkdir -p $R; cp .exp/run_c5.sh $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
timeout 500 python3 perf/tune_norms.py --out $R/gen --general \
  --ops layernorm_fwd rmsnorm_fwd layernorm_bwd rmsnorm_bwd --dtypes bf16 \
  --sizes 26368 50432 62208 --top 2 --target-ms 4 --time-budget 460 > $R/gen.txt 2>&1
echo "gen rc=$?"; grep -v "^\s*$" $R/gen.txt | tail -16
date -u
