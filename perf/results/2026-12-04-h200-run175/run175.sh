# Session 28, run 175 (uncommitted tree on d7a2237: streaming rows of several CTAs, contiguous
# parts exchanging their (max, sum) / dot as the held kernels do): the streaming sweep at 131072
# keys on 1, 2 or 4 CTAs a row (scaled and masked forwards, backward; three dtypes), its winners
# merged here (--min-gain 0.03), an A/B of those rows (and the causal 32768-key forwards, whose
# single-CTA SASS moved) against d7a2237 on both backends, then the softmax GPU test files.
. perf/device_env.sh
R=$OUT/r175; mkdir -p $R
timeout 210 python3 perf/tune_softmax.py --out $R/tune --stream \
  --ops softmax_fwd masked_softmax_fwd softmax_bwd --dtypes bf16 fp16 fp32 \
  --keys 131072 --target-ms 4 --time-budget 190 2>&1 | grep -v "^  " | tail -11
python3 perf/merge_measured.py $R/tune/measured_softmax.json --run perf/results/2026-12-04-h200-run175 --min-gain 0.03
cp numba_norms/data/measured_softmax.json $R/merged_measured_softmax.json
ab $R/ab 150 --ops softmax_fwd,masked_softmax_fwd,softmax_bwd,upper_triang_softmax_fwd,aligned_causal_softmax_fwd --backends nvrtc,numba --dtypes bf16,fp32 --sizes 32768,131072 --time-budget 120
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 170 bash perf/gpu_suite.sh tests tests/gpu/test_nvrtc_softmax_gpu.py tests/gpu/test_numba_softmax_gpu.py tests/gpu/test_softmax_api_gpu.py -rfEs --maxfail=25 -p xdist 2>&1 | tail -8
cd $OUT && tar czf r175.tgz r175 && rm -rf r175
