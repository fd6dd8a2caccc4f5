# Session 16, run 104: A/B, both backends, alternated twice: be2c2cb (.exp/old) against the tree
# with (1) the fp16 / fp32 softmax forward entries of run 103's sweep (and run 102's bf16 ones,
# A/B'd in run 103; the Numba path keeps bf16 softmax_fwd 4096's old shape) and (2) nine
# FP8-output forward entries of run 103's sweep at 1024-4096; then the GPU suite.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r104; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
AB="--no-torch --no-stream --no-jit --no-host --no-liger --target-ms 5"
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=40 bash perf/ab_bench.sh $R/absm --ops softmax_fwd,masked_softmax_fwd --dtypes fp16,fp32 --sizes 1024,2048,4096,8192,16384 $AB --time-budget 31
cut -c1-120 $R/absm/summary.csv
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=33 bash perf/ab_bench.sh $R/ab8 --ops layernorm_fwd_fp8,rmsnorm_fwd_fp8 --dtypes bf16,fp16,fp32 --sizes 1024,2048,4096 $AB --time-budget 25
cut -c1-120 $R/ab8/summary.csv
(cd $OUT && tar czf r104a.tgz r104)
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 230 bash perf/gpu_suite.sh tests tests tests/gpu -rfEs --maxfail=25 -p xdist > $R/suite.log 2>&1
tail -n 8 $R/suite.log
cd $OUT && rm -f r104a.tgz && tar czf r104.tgz r104 && rm -rf r104
