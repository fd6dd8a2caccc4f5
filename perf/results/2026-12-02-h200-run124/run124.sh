# Session 19, run 124: the NVRTC FP8-output forwards, which ran 1.05-1.61x slower than the Numba
# kernels of the same plan (runs 114-116). Their SASS held the output loop twice (the compiler
# unswitched it on the runtime amax test); with the per-element amax always taken for FP8
# outputs it holds it once (0.7-0.9x the instructions, dev box). A/B, NVRTC, alternated twice,
# FP8 forwards of bf16 / fp16 / fp32 at 5120 / 8192 / 16384: (1) HEAD against .exp/N1 (that
# change); (2) HEAD against this tree (that change, and x loaded through the read-only path).
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r124; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
AB="--ops fp8 --dtypes bf16,fp16,fp32 --sizes 5120,8192,16384 --backends nvrtc --no-torch --no-stream --no-jit --no-host --no-liger --target-ms 4 --time-budget 30"
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=40 bash .exp/N1/perf/ab_bench.sh $R/amax $AB
cut -c1-120 $R/amax/summary.csv
(cd $OUT && tar czf r124a.tgz r124)
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=40 bash perf/ab_bench.sh $R/ro $AB
cut -c1-120 $R/ro/summary.csv
cd $OUT && rm -f r124a.tgz && tar czf r124.tgz r124 && rm -rf r124
