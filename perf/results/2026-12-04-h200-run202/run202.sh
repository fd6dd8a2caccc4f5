# Session 31, run 202 (uncommitted tree on 976f3d0 with run 201's three 131072-key entries: rows
# of 2-8 CTAs, a cluster a row on the grid of all rows): one-round NVRTC A/B of those rows against
# HEAD, then the softmax and fast-path GPU test files.
. perf/device_env.sh
R=$OUT/r202; mkdir -p $R
cp .exp/run202.sh $R/
ROUNDS=1 ab $R/ab 30 --ops softmax_fwd,masked_softmax_fwd,softmax_bwd --backends nvrtc --dtypes bf16,fp32 --sizes 131072 --time-budget 22
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 165 bash perf/gpu_suite.sh tests tests/gpu/test_nvrtc_softmax_gpu.py tests/gpu/test_numba_softmax_gpu.py tests/gpu/test_softmax_api_gpu.py tests/gpu/test_fast_path_gpu.py -rfEs --maxfail=25 -p xdist 2>&1 | tail -6
