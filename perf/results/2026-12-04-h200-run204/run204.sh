# Session 32, run 204: (1) the run-203 bimodality of one-CTA-an-SM norm forwards at 32768 /
# 65536 columns: fresh allocations and output offsets in one process (.exp/offs.py); (2) the
# streaming softmax at 131072 keys on both grids for the problems run 201 did not reach (fp16
# forwards and backward, fp32 backward), winners > 3% merged, one-round NVRTC A/B against HEAD.
. perf/device_env.sh
R=$OUT/r204; mkdir -p $R
cp .exp/run204.sh .exp/offs.py $R/
timeout 60 python3 .exp/offs.py 32768 2>&1 | tail -20
timeout 40 python3 .exp/offs.py 65536 2>&1 | tail -20
timeout 250 python3 perf/tune_softmax.py --out $R/t131k --stream --grids persistent rows \
  --stream-ctas 1 2 4 8 --ops softmax_fwd masked_softmax_fwd softmax_bwd --dtypes fp16 \
  --keys 131072 --target-ms 4 --time-budget 170 2>&1 | grep -v "^  " | tail -6
timeout 100 python3 perf/tune_softmax.py --out $R/t131k32 --stream --grids persistent rows \
  --stream-ctas 1 2 4 8 --ops softmax_bwd --dtypes fp32 \
  --keys 131072 --target-ms 4 --time-budget 60 2>&1 | grep -v "^  " | tail -4
for d in t131k t131k32; do
  python3 perf/merge_measured.py $R/$d/measured_softmax.json --run perf/results/2026-12-04-h200-run204 --min-gain 0.03
done
cp numba_norms/data/measured_softmax.json $R/merged_measured_softmax.json
git diff --stat
ROUNDS=1 ab $R/ab 40 --ops softmax_fwd,masked_softmax_fwd,softmax_bwd --backends nvrtc --dtypes fp16,fp32 --sizes 131072 --time-budget 30
cd $R && tar czf ../r204.tgz . && cd .. && rm -rf r204
