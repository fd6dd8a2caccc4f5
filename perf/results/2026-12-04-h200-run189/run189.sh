# Session 30, run 189 (tree f7b1a74 less the nine other Numba softmax forward entries kept from
# runs 38-104 while the shared entries at those keys moved on later, untimed on Numba: masked
# 16-bit 2048 / 4096, masked fp32 1024 / 8192, scaled 16-bit 1024, scaled fp32 8192): A/B of the
# Numba forwards at 1024-8192 keys against f7b1a74 (unchanged rows: controls); the Numba softmax
# GPU file.
. perf/device_env.sh
R=$OUT/r189; mkdir -p $R
ab $R/ab 100 --ops softmax_fwd,masked_softmax_fwd --backends numba --dtypes bf16,fp16,fp32 --sizes 1024,2048,4096,8192 --time-budget 85
(cd $OUT && tar czf r189a.tgz r189)
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 100 bash perf/gpu_suite.sh tests tests/gpu/test_numba_softmax_gpu.py -rfEs --maxfail=25 -p xdist 2>&1 | tail -3
cd $OUT && rm -f r189a.tgz && tar czf r189.tgz r189 && rm -rf r189
