# Session 45, call 4: (a) same-run A/B against HEAD 8cb7abf (.exp/old): the Numba LayerNorm
# forward with shared warp counts (general kernels of several warps a row), bf16; NVRTC fp16
# with the final registry (fp16 keeps cap 3); (b) Numba general sweep (caps) for bf16 LayerNorm
# forward at long untiled rows, where Numba runs TE's uncapped entry.
. perf/device_env.sh
R=$OUT; mkdir -p $R; cp .exp/run_c4.sh $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
ab $R/ab 150 --ops layernorm_fwd,layernorm_fwd_fp8 --dtypes bf16 \
  --sizes 1000,5003,24832,40704,59648,121344 --backends numba
ab $R/ab2 90 --ops layernorm_fwd --dtypes fp16 --sizes 24832,40704,59648,121344 --backends nvrtc
rm -rf $R/ab*/old? $R/ab*/new?
grep -il "mismatch\|error\|Traceback" $R/ab*/*.txt | head -5
tar czf $R/ab_txt.tgz $R/ab*/*.txt 2>/dev/null; rm -f $R/ab*/*.txt
date -u
timeout 200 python3 perf/tune_norms.py --out $R/gen --backend numba --general \
  --ops layernorm_fwd --dtypes bf16 --sizes 40704 121344 --top 2 \
  --target-ms 4 --time-budget 180 > $R/gen.txt 2>&1
echo "gen rc=$?"; grep -v "^\s*$" $R/gen.txt | tail -6
gzip $R/gen/tune.csv; rm -f $R/gen/measured_norms.json
date -u
