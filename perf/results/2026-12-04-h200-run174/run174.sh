# Session 28, run 174 (uncommitted tree on 2c23f4a: runs 172-173's streaming backward entries, the
# Numba 4-byte evict-first load fixed): the streaming forward at 131072 keys walked both ways
# (scaled, masked; three dtypes), its winners merged here (--min-gain 0.03), then an A/B of the
# softmax forwards and backwards at 32768 / 131072 keys against 2c23f4a on both backends, and the
# softmax GPU test files.
. perf/device_env.sh
R=$OUT/r174; mkdir -p $R
timeout 150 python3 perf/tune_softmax.py --out $R/fwd --stream \
  --ops softmax_fwd masked_softmax_fwd --dtypes bf16 fp16 fp32 \
  --keys 131072 --target-ms 4 --time-budget 120 2>&1 | grep -v "^  " | tail -8
python3 perf/merge_measured.py $R/fwd/measured_softmax.json --run perf/results/2026-12-04-h200-run174 --min-gain 0.03
cp numba_norms/data/measured_softmax.json $R/merged_measured_softmax.json
ab $R/ab 110 --ops softmax_fwd,masked_softmax_fwd,softmax_bwd --backends nvrtc,numba --dtypes bf16,fp16,fp32 --sizes 32768,131072 --time-budget 90
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 150 bash perf/gpu_suite.sh tests tests/gpu/test_nvrtc_softmax_gpu.py tests/gpu/test_numba_softmax_gpu.py tests/gpu/test_softmax_api_gpu.py -rfEs --maxfail=25 -p xdist 2>&1 | tail -5
cd $OUT && tar czf r174.tgz r174 && rm -rf r174
