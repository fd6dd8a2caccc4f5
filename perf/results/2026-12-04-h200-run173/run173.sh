# Session 28, run 173 (uncommitted tree on 2c23f4a with run 172's two streaming backward entries):
# the streaming forward at 131072 keys walked both ways (scaled, masked, aligned causal; three
# dtypes), the Numba kernels on run 172's best backward shapes at 32768 keys, and an A/B of the
# backward against 2c23f4a on both backends.
. perf/device_env.sh
R=$OUT/r173; mkdir -p $R
timeout 170 python3 perf/tune_softmax.py --out $R/fwd --stream \
  --ops softmax_fwd masked_softmax_fwd aligned_causal_softmax_fwd --dtypes bf16 fp16 fp32 \
  --keys 131072 --target-ms 4 --time-budget 140 2>&1 | grep -v "^  " | tail -12
timeout 150 python3 perf/tune_softmax.py --out $R/nb --backend numba \
  --refine perf/results/2026-12-04-h200-run172/tune/tune.csv --ops softmax_bwd \
  --dtypes bf16 fp16 fp32 --keys 32768 --top 4 --target-ms 4 --time-budget 120 2>&1 \
  | grep -v "^  " | tail -6
ab $R/ab 70 --ops softmax_bwd --backends nvrtc,numba --dtypes bf16,fp16,fp32 --sizes 16384,32768,131072 --time-budget 50
cd $OUT && tar czf r173.tgz r173 && rm -rf r173
