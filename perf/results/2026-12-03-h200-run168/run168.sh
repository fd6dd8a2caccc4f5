# Session 27, run 168: the Numba kernels on the fastest shapes of run 166's NVRTC sweep (the
# streaming forward among them) where the Numba path keeps its own held entries: scaled 16-bit
# forwards at 32768 / 131072 keys (perf/tune_softmax.py --backend numba --refine).
. perf/device_env.sh
R=$OUT/r168; mkdir -p $R
timeout 200 python3 perf/tune_softmax.py --out $R/nb --backend numba \
  --refine perf/results/2026-12-03-h200-run166/tune/tune.csv --ops softmax_fwd \
  --dtypes bf16 fp16 --keys 32768 131072 --top 4 --target-ms 4 --time-budget 170 2>&1 \
  | grep -v "^  " | tail -12
cd $OUT && tar czf r168.tgz r168 && rm -rf r168
