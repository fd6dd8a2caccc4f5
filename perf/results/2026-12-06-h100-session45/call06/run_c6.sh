# Session 45, call 6: the session's tree (shared warp counts in the LayerNorm general forward;
# capped general entries: bf16 LayerNorm forward at 8 CTAs an SM on NVRTC, the Numba path's
# caps past 20480). (a) same-run A/B against HEAD 8cb7abf (.exp/old), Numba, every norm op;
# (b) bench.py NVRTC at the targets line's sizes; (c) the whole GPU suite.
. perf/device_env.sh
R=$OUT; mkdir -p $R; cp .exp/run_c6.sh $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
ab $R/ab 75 --ops layernorm_fwd,rmsnorm_fwd,layernorm_bwd,rmsnorm_bwd,layernorm_fwd_fp8,rmsnorm_fwd_fp8 \
  --dtypes bf16 --sizes 24832,46336,121344 --backends numba
rm -rf $R/ab*/old? $R/ab*/new?
grep -il "mismatch\|error\|Traceback" $R/ab*/*.txt | head -5
tar czf $R/ab_txt.tgz $R/ab*/*.txt 2>/dev/null; rm -f $R/ab*/*.txt
date -u
timeout 60 python3 perf/bench.py --out $R/bench --ops norms --backends nvrtc --dtypes bf16,fp16 \
  --sizes 24832,32768,40704,59648,65536 --no-torch --no-stream --no-jit --no-host --no-liger \
  --target-ms 4 > $R/bench.txt 2>&1; echo "bench rc=$?"
python3 perf/targets.py --misses $R/bench/bench.csv 2>&1 | grep -A40 "no tuned shape" | head -30
rm -f $R/bench/host.csv $R/bench/jit.csv
date -u
GPU_TEST_WORKERS=15 OUT=$R/suite timeout 330 bash perf/gpu_suite.sh tests tests/gpu \
  -rfE --maxfail=40 -p xdist 2>&1 | tail -12
rm -f $R/suite/gpu_tests.log
date -u
