# Session 23, run 144: the whole GPU suite on this tree (NormConfig.fold, runs 142-143's 32 NVRTC
# forward entries merged, the Numba path pinned to its previous shapes), then a same-run A/B of
# those shapes against 2f0aec7 (NVRTC, bench.py alternated twice).
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r144; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 240 bash perf/gpu_suite.sh tests tests tests/gpu -rfEs --maxfail=25 -p xdist 2>&1 | grep -E "passed|failed|error|FAIL|ERROR" | tail -30
(cd $OUT && tar czf r144a.tgz r144)
COMMON="--backends nvrtc --no-torch --no-stream --no-jit --no-host --no-liger --target-ms 4"
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=80 bash perf/ab_bench.sh $R/ln --ops layernorm_fwd,layernorm_fwd_fp8 --dtypes bf16,fp16 --sizes 768,1024,2048,2560,3584,5120,7168,8192,12288 $COMMON --time-budget 50
cut -c1-100 $R/ln/summary.csv
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=80 bash perf/ab_bench.sh $R/rms --ops rmsnorm_fwd,rmsnorm_fwd_fp8 --dtypes bf16,fp16,fp32 --sizes 1024,2560,3584,5120,7168,12288,65536 $COMMON --time-budget 50
cut -c1-100 $R/rms/summary.csv
cd $OUT && rm -f r144a.tgz && tar czf r144.tgz r144 && rm -rf r144
