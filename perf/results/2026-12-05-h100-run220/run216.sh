# Session 37, run 216 (inside run 220, on an H200 only): a sweep of the staged masked shapes at
# 131072 keys (2 / 4 / 8 CTAs a row, three dtypes), winners > 3% merged,
# then a one-round NVRTC A/B of those rows against b6ecf51 (.exp/old).
. perf/device_env.sh
R=$OUT/r216; mkdir -p $R
cp .exp/run216.sh $R/
date -u
timeout 170 python3 perf/tune_softmax.py --out $R/st --stream --staged-only --grids rows \
  --stream-ctas 2 4 8 --ops masked_softmax_fwd --dtypes bf16 fp16 fp32 --keys 131072 \
  --target-ms 4 --time-budget 140 2>&1 | grep -v "^  " | tail -14
if [ -f $R/st/measured_softmax.json ]; then
python3 - $R/st/measured_softmax.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["entries"] = [e for e in d["entries"] if e.get("stage")]
print(len(d["entries"]), "staged winners")
json.dump(d, open(sys.argv[1], "w"), indent=1)
PY
python3 perf/merge_measured.py $R/st/measured_softmax.json --run perf/results/2026-12-05-h200-run216 --min-gain 0.03
cp numba_norms/data/measured_softmax.json $R/merged_measured_softmax.json
date -u
ROUNDS=1 ab $R/ab 70 --ops masked_softmax_fwd --backends nvrtc --dtypes bf16,fp16,fp32 --sizes 131072 --time-budget 60
fi
date -u
cd $R && tar czf ../r216.tgz . && cd .. && rm -rf r216
