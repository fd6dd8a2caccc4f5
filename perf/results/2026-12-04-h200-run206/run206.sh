# Session 32, run 206: (1) A/B (NVRTC and Numba, two rounds) of the aligned causal fp32 forward at
# 131072 keys on the scaled fp32 entry's shape (8 CTAs a row, a cluster a row on the grid of
# rows) against HEAD; (2) the softmax GPU test files on the new table; (3) the softmax scoreboard
# at 32768 / 131072 keys, every dtype, both backends, torch eager and the same-size stream.
. perf/device_env.sh
R=$OUT/r206; mkdir -p $R
cp .exp/run206.sh $R/
ROUNDS=2 ab $R/ab 45 --ops aligned_causal_softmax_fwd,softmax_fwd --backends nvrtc,numba --dtypes fp32 --sizes 131072 --time-budget 35
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 170 bash perf/gpu_suite.sh tests tests/gpu/test_nvrtc_softmax_gpu.py tests/gpu/test_numba_softmax_gpu.py tests/gpu/test_softmax_api_gpu.py tests/gpu/test_fast_path_gpu.py -rfEs --maxfail=25 -p xdist 2>&1 | tail -4
timeout 230 python3 perf/bench.py --out $R/sb --ops softmax --sizes 32768,131072 --dtypes bf16,fp16,fp32 --no-jit --no-host --no-liger --target-ms 8 --time-budget 210 > $R/sb.txt 2>&1
grep -E "softmax" $R/sb.txt | grep -v "^perf\|command" | awk "{print \$1,\$2,\$3,\$4,\$7}"
cd $R && tar czf ../r206.tgz . && cd .. && rm -rf r206
