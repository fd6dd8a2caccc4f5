# Session 15, run 97: (1) A/B of run 96's merged rows-grid RMSNorm forward entries (the A/B of
# run 96 ran out of its time budget before 4096 / 8192): b1d522a (.exp/old) against this tree,
# both backends, bf16 / fp16, alternated twice, no Liger rows; (2) the same at 1000 columns,
# all four ops (registry._VECTOR_GENERAL as now: NVRTC LayerNorm only, Numba all four);
# (3) the whole GPU suite on this tree.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r97; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
A="--no-torch --no-stream --no-jit --no-host --no-liger --target-ms 5"
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=45 bash perf/ab_bench.sh $R/ab --ops rmsnorm_fwd --dtypes bf16,fp16 --sizes 2048,3584,4096,8192 --time-budget 36 $A
cut -c1-120 $R/ab/summary.csv
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=45 bash perf/ab_bench.sh $R/ab1000 --ops layernorm_fwd,rmsnorm_fwd,layernorm_bwd,rmsnorm_bwd --dtypes bf16,fp16 --sizes 1000 --time-budget 36 $A
cut -c1-120 $R/ab1000/summary.csv
(cd $OUT && tar czf r97a.tgz r97)
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 225 bash perf/gpu_suite.sh tests tests tests/gpu -rfEs --maxfail=25 -p xdist > $R/suite.log 2>&1
grep -E "^(FAILED|ERROR)" $R/suite.log | head -20
tail -n 2 $R/suite.log
cd $OUT && rm -f r97a.tgz && tar czf r97.tgz r97 && rm -rf r97
