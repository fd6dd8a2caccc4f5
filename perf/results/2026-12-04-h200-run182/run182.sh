# Session 29, run 182 (uncommitted tree on b33545f: SoftmaxConfig.prefetch on streaming forward
# entries, NVRTC's first pass issuing the next chunk's loads before this chunk's arithmetic;
# tune_softmax --stream times it): the streaming sweep of the 16-bit forwards at 32768 / 131072
# keys, its winners merged here (--min-gain 0.03), an A/B of those rows against e548be0 on both
# backends, then the softmax GPU test files.
. perf/device_env.sh
R=$OUT/r182; mkdir -p $R
timeout 100 python3 perf/tune_softmax.py --out $R/tune --stream \
  --ops softmax_fwd upper_triang_softmax_fwd masked_softmax_fwd --dtypes bf16 fp16 \
  --keys 32768 131072 --target-ms 4 --time-budget 85 2>&1 | grep -v "^  " | tail -9
python3 perf/merge_measured.py $R/tune/measured_softmax.json --run perf/results/2026-12-04-h200-run182 --min-gain 0.03
cp numba_norms/data/measured_softmax.json $R/merged_measured_softmax.json
(cd $OUT && tar czf r182a.tgz r182)
ab $R/ab 90 --ops softmax_fwd,masked_softmax_fwd,upper_triang_softmax_fwd,aligned_causal_softmax_fwd --backends nvrtc,numba --dtypes bf16,fp16 --sizes 32768,131072 --time-budget 80
(cd $OUT && rm -f r182a.tgz && tar czf r182b.tgz r182)
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 130 bash perf/gpu_suite.sh tests tests/gpu/test_nvrtc_softmax_gpu.py tests/gpu/test_numba_softmax_gpu.py tests/gpu/test_softmax_api_gpu.py -rfEs --maxfail=25 -p xdist 2>&1 | tail -4
cd $OUT && rm -f r182b.tgz && tar czf r182.tgz r182 && rm -rf r182
