# Session 32, run 205: (1) the address probe of run 204 repeated with larger grids (.exp/offs2.py);
# (2) Numba A/B (two rounds) of run 204's three 131072-key entries against HEAD; (3) the softmax
# and fast-path GPU test files on the new table.
. perf/device_env.sh
R=$OUT/r205; mkdir -p $R
cp .exp/run205.sh .exp/offs2.py $R/
timeout 70 python3 .exp/offs2.py 32768 2>&1 | tail -16
timeout 60 python3 .exp/offs2.py 65536 2>&1 | tail -16
ROUNDS=2 ab $R/ab 60 --ops masked_softmax_fwd,softmax_bwd --backends numba --dtypes fp16,fp32 --sizes 131072 --time-budget 45
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 200 bash perf/gpu_suite.sh tests tests/gpu/test_nvrtc_softmax_gpu.py tests/gpu/test_numba_softmax_gpu.py tests/gpu/test_softmax_api_gpu.py tests/gpu/test_fast_path_gpu.py -rfEs --maxfail=25 -p xdist 2>&1 | tail -6
cd $R && tar czf ../r205.tgz . && cd .. && rm -rf r205
