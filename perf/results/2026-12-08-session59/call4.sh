# The next session's first GPU call (session 59 wrote it; call 3 never ran). Run from the
# repository root with carry [".whl"]:  bash perf/results/2026-12-08-session59/call4.sh
# (a) A/B of session 59's Numba layernorm_bwd bands (this tree, 1 x 4 / 1 x 8 with the
#     pipeline from 3073 columns) against the bands before them (numba_lnbwd_bands_before.diff
#     as the variant): in ab/summary.csv old = this tree, new = the former bands, so old/new
#     below 1 means this tree is faster; bf16 and fp16, lengths through both bands;
# (b) the Numba general sweep of both backwards at 2053 / 5003 (odd rows): session 59 ran
#     Numba's at 0.39-0.45x NVRTC's on the same pipelined entries there, 1.06x at 12289 where
#     the entry has no pipeline;
# (c) the Numba general sweep of fp32 layernorm at 12296 / 4104: Numba's layernorm_fwd 12296
#     ran 0.78x torch on TE's 2-CTA entry, the backwards 0.74-0.76x NVRTC.
# Then the whole GPU suite in a call of its own:
#   GPU_TEST_WORKERS=15 OUT=$OUT/suite timeout 420 bash perf/gpu_suite.sh tests tests tests/gpu \
#     -rfE --maxfail=40 -p xdist
. perf/device_env.sh
S=perf/results/2026-12-08-session59
R=$OUT/c4; mkdir -p $R
cp $S/call4.sh $R/call4.sh.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
git log --oneline -1 > $R/tree.txt
abv $S/numba_lnbwd_bands_before.diff $R/ab 60 --ops layernorm_bwd --backends numba \
  --dtypes bf16,fp16 --sizes 3080,4104,5112,6152,8200,10232
timeout 90 python3 perf/tune_norms.py --out $R/sw --backend numba --general --top 3 \
  --ops layernorm_bwd rmsnorm_bwd --dtypes bf16 --sizes 2053 5003 --target-ms 4 \
  --time-budget 75 > $R/sw.log 2>&1
echo "sweep rc=$? at $SECONDS s"; grep -h "x[0-9]" $R/sw.log
timeout 95 python3 perf/tune_norms.py --out $R/sw32 --backend numba --general --top 3 \
  --ops layernorm_fwd layernorm_bwd --dtypes fp32 --sizes 12296 4104 --target-ms 4 \
  --time-budget 80 > $R/sw32.log 2>&1
echo "fp32 sweep rc=$? at $SECONDS s"; grep -h "x[0-9]" $R/sw32.log
