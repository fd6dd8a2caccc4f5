# Session 22, run 140: the kept form (RMS_FOLDED: one-CTA RMSNorm forwards without the exchange
# and with one address a row on the 16 shapes that ran >= 1.03x in both rounds of run 139; every
# other kernel keeps 2b5cc18's SASS, dev box). (1) The whole GPU suite; (2) A/B against 2b5cc18,
# NVRTC, alternated twice, rmsnorm_fwd / rmsnorm_fwd_fp8 bf16 / fp16 / fp32 at the listed sizes
# and two unlisted ones (4096, 32768).
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r140; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 330 bash perf/gpu_suite.sh tests tests tests/gpu -rfEs --maxfail=25 -p xdist 2>&1 | grep -E "passed|failed|FAILED|ERROR" | tail -30
(cd $OUT && tar czf r140a.tgz r140)
COMMON="--ops rmsnorm_fwd,rmsnorm_fwd_fp8 --backends nvrtc --no-torch --no-stream --no-jit --no-host --no-liger --target-ms 4"
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=60 bash perf/ab_bench.sh $R/ab $COMMON --dtypes bf16,fp16,fp32 --sizes 768,1024,2048,2560,4096,5120,7168,8192,12288,32768,65536 --time-budget 45
cut -c1-90 $R/ab/summary.csv
cd $OUT && rm -f r140a.tgz && tar czf r140.tgz r140 && rm -rf r140
