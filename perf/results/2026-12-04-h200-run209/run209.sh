# Session 32, run 209: the staged streaming forward (SoftmaxConfig.stage: the row kept in shared
# memory between the passes; run 208's prototype 92.6-93.3% at bf16 32768 keys): its GPU tests
# (both backends), a sweep of the streaming shapes with the staged ones at 16384 / 32768 keys
# (scaled and upper-triangular, every dtype, grid of rows), staged winners > 3% merged, then a
# one-round A/B (NVRTC and Numba) of the changed rows against HEAD.
. perf/device_env.sh
R=$OUT/r209; mkdir -p $R
cp .exp/run209.sh $R/
GPU_TEST_WORKERS=8 OUT=$R/suite timeout 150 bash perf/gpu_suite.sh tests tests/gpu/test_nvrtc_softmax_gpu.py tests/gpu/test_numba_softmax_gpu.py -k staged -rfEs --maxfail=10 -p xdist 2>&1 | tail -4
timeout 150 python3 perf/tune_softmax.py --out $R/st --stream --stage --grids rows \
  --ops softmax_fwd upper_triang_softmax_fwd --dtypes bf16 fp16 fp32 --keys 16384 32768 \
  --target-ms 4 --time-budget 120 2>&1 | grep -v "^  " | tail -14
python3 - $R/st/measured_softmax.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["entries"] = [e for e in d["entries"] if e.get("stage")]
print(len(d["entries"]), "staged winners")
json.dump(d, open(sys.argv[1], "w"), indent=1)
PY
python3 perf/merge_measured.py $R/st/measured_softmax.json --run perf/results/2026-12-04-h200-run209 --min-gain 0.03
cp numba_norms/data/measured_softmax.json $R/merged_measured_softmax.json
ROUNDS=1 ab $R/ab 80 --ops softmax_fwd,upper_triang_softmax_fwd --backends nvrtc,numba --dtypes bf16,fp16,fp32 --sizes 16384,32768 --time-budget 70
cd $R && tar czf ../r209.tgz . && cd .. && rm -rf r209
