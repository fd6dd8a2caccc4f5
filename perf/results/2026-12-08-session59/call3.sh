# NOT RUN, and superseded by call4.sh: its diff (numba_lnbwd_bands.diff) is in the tree since
# 8c42870, so abv can no longer apply it.
# Session 59, call 3 (after calls 1-2 on an H100). Run from the repository root with carry
# [".whl"]:  bash perf/results/2026-12-08-session59/call3.sh
# (a) A/B of the Numba layernorm_bwd bands on NVRTC's shapes (numba_lnbwd_bands.diff: 1 x 4 with
#     the pipeline to 5120, 1 x 8 with it to 10240; call 1's FORCE=nvrtc ran 1.16x / 1.21x at
#     4104 / 8200 and the Numba sweep chose the same shapes), bf16 and fp16;
# (b) the Numba general sweep of both backwards at 2053 / 5003 (odd rows): call 1 ran Numba's
#     at 0.39-0.45x NVRTC's on the same entries there (1 x 8 / 1 x 16 with the pipeline) but
#     1.06x at 12289, where the entry has no pipeline;
. perf/device_env.sh
S=perf/results/2026-12-08-session59
R=$OUT/c3; mkdir -p $R
cp $S/call3.sh $R/call3.sh.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
git log --oneline -1 > $R/tree.txt
abv $S/numba_lnbwd_bands.diff $R/ab 60 --ops layernorm_bwd --backends numba --dtypes bf16,fp16 \
  --sizes 4104,6152,8200,10232
timeout 90 python3 perf/tune_norms.py --out $R/sw --backend numba --general --top 3 \
  --ops layernorm_bwd rmsnorm_bwd --dtypes bf16 --sizes 2053 5003 --target-ms 4 \
  --time-budget 75 > $R/sw.log 2>&1
echo "sweep rc=$? at $SECONDS s"; grep -h "x[0-9]" $R/sw.log
