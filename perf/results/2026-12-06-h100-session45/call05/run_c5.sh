# Session 45, call 5: Numba general sweep (TE's entry under register caps, and one-CTA general
# shapes) for every norm op at long bf16 / fp16 rows no tuned shape tiles (Numba runs TE's
# uncapped entry there), this session's tree.
. perf/device_env.sh
R=$OUT; mkdir -p $R; cp .exp/run_c5.sh $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
timeout 400 python3 perf/tune_norms.py --out $R/gen --backend numba --general \
  --ops layernorm_fwd rmsnorm_fwd layernorm_bwd rmsnorm_bwd --dtypes bf16 fp16 bf16-fp8 \
  --sizes 24832 59648 121344 --top 2 --target-ms 4 --time-budget 380 > $R/gen.txt 2>&1
echo "gen rc=$?"; grep -v "^\s*$" $R/gen.txt | tail -30
gzip $R/gen/tune.csv; rm -f $R/gen/measured_norms*.json
date -u
