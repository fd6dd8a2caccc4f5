# Session 45, call 2: the LayerNorm general forward with its warp counts in shared memory and
# the warp mean as sum * (1 / count) (ptxas: fewer spills). (a) same-run A/B against HEAD
# 8cb7abf (.exp/old), NVRTC, at current selections; (b) tune_norms.py --general sweep again.
. perf/device_env.sh
R=$OUT; mkdir -p $R; cp .exp/run_c2.sh $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
ab $R/ab 120 --ops layernorm_fwd,layernorm_fwd_fp8 --dtypes bf16 \
  --sizes 1000,5003,24832,40704,46336,59648,121344 --backends nvrtc
ab $R/ab2 90 --ops layernorm_fwd,layernorm_fwd_fp8 --dtypes fp32,fp16 \
  --sizes 1000,5003,12289,40704 --backends nvrtc
rm -rf $R/ab*/old? $R/ab*/new?
grep -il "mismatch\|error\|Traceback" $R/ab*/*.txt | head -5
tar czf $R/ab_txt.tgz $R/ab*/*.txt 2>/dev/null; rm -f $R/ab*/*.txt
date -u
timeout 200 python3 perf/tune_norms.py --out $R/gen --general --general-ctas 4 \
  --ops layernorm_fwd --dtypes bf16 bf16-fp8 --sizes 40704 46336 59648 121344 --top 3 \
  --target-ms 4 --time-budget 180 > $R/gen.txt 2>&1
echo "gen rc=$?"; grep -v "^\s*$" $R/gen.txt | tail -12
gzip $R/gen/tune.csv; rm -f $R/gen/measured_norms.json
date -u
