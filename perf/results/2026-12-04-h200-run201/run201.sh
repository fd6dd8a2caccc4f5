# Session 31, run 201: at 131072 keys, the streaming kernels on rows of 1-8 CTAs on both grids
# (rows of several CTAs on the grid of rows: a cluster a row, placed by the hardware), bf16 and
# fp32; winners > 3% merged into the device copy of the table, then an NVRTC A/B against HEAD.
. perf/device_env.sh
R=$OUT/r201; mkdir -p $R
cp .exp/run201.sh $R/
timeout 200 python3 perf/tune_softmax.py --out $R/t131k --stream --grids persistent rows \
  --stream-ctas 1 2 4 8 --ops softmax_fwd masked_softmax_fwd softmax_bwd --dtypes bf16 fp32 \
  --keys 131072 --target-ms 4 --time-budget 180 2>&1 | grep -v "^  " | tail -8
python3 perf/merge_measured.py $R/t131k/measured_softmax.json --run perf/results/2026-12-04-h200-run201 --min-gain 0.03
cp numba_norms/data/measured_softmax.json $R/merged_measured_softmax.json
ROUNDS=2 ab $R/ab 40 --ops softmax_fwd,masked_softmax_fwd,softmax_bwd --backends nvrtc --dtypes bf16,fp32 --sizes 131072 --time-budget 30
