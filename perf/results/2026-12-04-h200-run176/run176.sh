# Session 28, run 176 (uncommitted tree on d7a2237 with run 175's entries, the aligned causal fp32
# 131072-key entry copied from the scaled one, a Numba fp32 131072 entry keeping the held shape):
# the Numba kernels on run 175's best 131072-key shapes (16-bit backward and masked forward, where
# the Numba path has held entries of its own), then an A/B of the 131072-key forwards and
# backward against d7a2237 on both backends.
. perf/device_env.sh
R=$OUT/r176; mkdir -p $R
timeout 220 python3 perf/tune_softmax.py --out $R/nb --backend numba \
  --refine perf/results/2026-12-04-h200-run175/tune/tune.csv --ops softmax_bwd masked_softmax_fwd \
  --dtypes bf16 fp16 --keys 131072 --top 4 --target-ms 4 --time-budget 190 2>&1 \
  | grep -v "^  " | tail -6
ab $R/ab 120 --ops softmax_fwd,masked_softmax_fwd,aligned_causal_softmax_fwd,softmax_bwd --backends nvrtc,numba --dtypes bf16,fp16,fp32 --sizes 131072 --time-budget 100
cd $OUT && tar czf r176.tgz r176 && rm -rf r176
