# Session 43, call 2: the whole GPU suite on the session's tree (staged norm forwards in the
# measured table; rtc.build_once and the FIFO guard since session 42's GPU suite on 4f52188).
. perf/device_env.sh
R=$OUT; mkdir -p $R
cp .exp/run503.sh $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
git log --oneline -1 2>/dev/null | tee $R/tree.txt
date -u
GPU_TEST_WORKERS=15 OUT=$R/suite timeout 430 bash perf/gpu_suite.sh tests tests/gpu \
  -rfE --maxfail=40 -p xdist -q 2>&1 | tail -30
rm -f $R/suite/gpu_tests.log
date -u
# then: bf16 LayerNorm 65536 (and -> e4m3) on fp16's shape (2 CTAs a row as a cluster, 16
# warps, the register pipeline; fp16 89.0% of the ceiling in call 1) against the 1 x 32-warp
# entry (81.7%): OLD = .exp/lnb (2-CTA shape), new = this tree
OLD=.exp/lnb ab $R/lnb 120 --ops layernorm_fwd,layernorm_fwd_fp8 --dtypes bf16 --sizes 65536 --backends nvrtc
date -u
