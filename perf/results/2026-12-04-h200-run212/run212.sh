# Session 33, run 212: the staged forward on rows of several CTAs (a cluster a row on the grid of
# rows, each CTA keeping its part in shared memory): its GPU tests (both backends), a sweep of
# the staged shapes alone at 131072 keys (2 / 4 / 8 CTAs a row; scaled, upper-triangular,
# aligned causal; every dtype) against the serving entries, winners > 3% merged, then a
# one-round A/B (NVRTC and Numba) of those rows against HEAD.
. perf/device_env.sh
R=$OUT/r212; mkdir -p $R
cp .exp/run212.sh $R/
GPU_TEST_WORKERS=8 OUT=$R/suite timeout 150 bash perf/gpu_suite.sh tests tests/gpu/test_nvrtc_softmax_gpu.py tests/gpu/test_numba_softmax_gpu.py -k staged -rfEs --maxfail=10 -p xdist 2>&1 | tail -4
timeout 230 python3 perf/tune_softmax.py --out $R/st --stream --staged-only --grids rows \
  --stream-ctas 2 4 8 --ops softmax_fwd upper_triang_softmax_fwd aligned_causal_softmax_fwd \
  --dtypes bf16 fp16 fp32 --keys 131072 --target-ms 4 --time-budget 200 2>&1 | grep -v "^  " | tail -12
python3 - $R/st/measured_softmax.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["entries"] = [e for e in d["entries"] if e.get("stage")]
print(len(d["entries"]), "staged winners")
json.dump(d, open(sys.argv[1], "w"), indent=1)
PY
python3 perf/merge_measured.py $R/st/measured_softmax.json --run perf/results/2026-12-04-h200-run212 --min-gain 0.03
cp numba_norms/data/measured_softmax.json $R/merged_measured_softmax.json
ROUNDS=1 ab $R/ab 100 --ops softmax_fwd,upper_triang_softmax_fwd,aligned_causal_softmax_fwd --backends nvrtc,numba --dtypes bf16,fp16,fp32 --sizes 131072 --time-budget 90
cd $R && tar czf ../r212.tgz . && cd .. && rm -rf r212
