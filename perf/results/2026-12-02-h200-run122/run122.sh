# Session 19, run 122: (1) A/B, NVRTC, alternated twice, of the fp16 widening in norms.cuh alone:
# .exp/A (this session's tables, the old `mov.b32 {l, h}` + cvt.f32.f16 of a half) against .exp/B
# (the same tables, cvt.f32.f16 of a 16-bit operand; on the dev box 26 fp16 kernels lose their
# spills, none gains any): every fp16 norm op (FP8 outputs included) at 1024-65536;
# (2) A/B, NVRTC, alternated twice: .exp/B against this tree (the new widening, and bf16's entries
# for fp16 layernorm_bwd 16384 / 32768 and rmsnorm_bwd 65536, which spilled in fp16 before);
# (3) the whole GPU suite on this tree.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r122; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
AB="--no-torch --no-stream --no-jit --no-host --no-liger --target-ms 4"
OLD=.exp/A ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=80 bash .exp/B/perf/ab_bench.sh $R/cvt --ops norms --dtypes fp16 --sizes 1024,4096,8192,16384,32768,65536 --backends nvrtc $AB --time-budget 60
cut -c1-150 $R/cvt/summary.csv
(cd $OUT && tar czf r122a.tgz r122)
OLD=.exp/B ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=45 bash perf/ab_bench.sh $R/ab --ops layernorm_bwd,rmsnorm_bwd --dtypes fp16 --sizes 16384,32768,65536 --backends nvrtc $AB --time-budget 30
cut -c1-150 $R/ab/summary.csv
(cd $OUT && rm -f r122a.tgz && tar czf r122a.tgz r122)
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 230 bash perf/gpu_suite.sh tests tests tests/gpu -rfEs --maxfail=25 -p xdist > $R/suite.log 2>&1
tail -n 8 $R/suite.log
cd $OUT && rm -f r122a.tgz && tar czf r122.tgz r122 && rm -rf r122
