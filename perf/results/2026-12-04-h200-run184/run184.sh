# Session 30, run 184 (tree b70f332 + the aligned causal 16-bit 131072-key entries on chunks of
# 4): the NVRTC masked fp32 forward at 131072 keys swept again (held shapes with register caps,
# then the streaming shapes; its held entry of run 38 spills at 128 registers and runs 1.13x
# slower than Numba's same shape), winners merged (--min-gain 0.03) one after the other; an A/B
# of those rows against b70f332 on both backends; the softmax GPU test files.
. perf/device_env.sh
R=$OUT/r184; mkdir -p $R
timeout 90 python3 perf/tune_softmax.py --out $R/held --ops masked_softmax_fwd --dtypes fp32 \
  --keys 131072 --target-ms 4 --time-budget 80 2>&1 | grep -v "^  " | tail -6
python3 perf/merge_measured.py $R/held/measured_softmax.json --run perf/results/2026-12-04-h200-run184 --min-gain 0.03
timeout 80 python3 perf/tune_softmax.py --out $R/stream --stream --ops masked_softmax_fwd --dtypes fp32 \
  --keys 131072 --target-ms 4 --time-budget 70 2>&1 | grep -v "^  " | tail -6
python3 perf/merge_measured.py $R/stream/measured_softmax.json --run perf/results/2026-12-04-h200-run184 --min-gain 0.03
cp numba_norms/data/measured_softmax.json $R/merged_measured_softmax.json
(cd $OUT && tar czf r184a.tgz r184)
ab $R/ab 80 --ops softmax_fwd,masked_softmax_fwd,aligned_causal_softmax_fwd --backends nvrtc,numba --dtypes bf16,fp16,fp32 --sizes 131072 --time-budget 70
(cd $OUT && rm -f r184a.tgz && tar czf r184b.tgz r184)
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 130 bash perf/gpu_suite.sh tests tests/gpu/test_nvrtc_softmax_gpu.py tests/gpu/test_numba_softmax_gpu.py tests/gpu/test_softmax_api_gpu.py -rfEs --maxfail=25 -p xdist 2>&1 | tail -4
cd $OUT && rm -f r184b.tgz && tar czf r184.tgz r184 && rm -rf r184
