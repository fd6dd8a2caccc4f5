# Session 30, run 188 (tree d149709 less six of the Numba path's own softmax forward entries,
# kept from runs 38-46 while the shared entries at those keys moved on in runs 103-175 and were
# never timed on Numba: masked 16-bit 16384 / 131072, scaled and masked fp32 32768): A/B of the
# Numba path's forwards at 16384 / 32768 / 131072 keys against d149709 (the unchanged rows are
# the controls); then the Numba softmax GPU file.
. perf/device_env.sh
R=$OUT/r188; mkdir -p $R
ab $R/ab 100 --ops softmax_fwd,masked_softmax_fwd --backends numba --dtypes bf16,fp16,fp32 --sizes 16384,32768,131072 --time-budget 85
(cd $OUT && tar czf r188a.tgz r188)
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 100 bash perf/gpu_suite.sh tests tests/gpu/test_numba_softmax_gpu.py -rfEs --maxfail=25 -p xdist 2>&1 | tail -3
cd $OUT && rm -f r188a.tgz && tar czf r188.tgz r188 && rm -rf r188
