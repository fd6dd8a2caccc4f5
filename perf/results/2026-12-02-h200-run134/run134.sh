# Session 21, run 134: one-CTA RMSNorm forwards without the inter-CTA exchange (the column step
# a constant) at every benchmark shape 4096-65536, all dtypes, FP8 (e4m3) outputs included: A/B
# against HEAD's kernels (2905fd8), NVRTC, alternated twice, every RMSNorm op (the backward is
# unchanged: a control); then the whole GPU test suite on this tree.
# The tree of this call: 2905fd8 plus norms_py_run134.patch (this folder: the candidate
# table, not kept) and session 21's other changes (softmax constant step, kernel_key, get_again).
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r134; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=70 bash perf/ab_bench.sh $R/rms --ops rmsnorm --backends nvrtc --no-torch --no-stream --no-jit --no-host --no-liger --target-ms 4 --dtypes bf16,fp16,fp32 --sizes 4096,8192,16384,32768,65536 --time-budget 45
cut -c1-100 $R/rms/summary.csv
(cd $OUT && tar czf r134a.tgz r134)
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 260 bash perf/gpu_suite.sh tests tests tests/gpu -rfEs --maxfail=25 -p xdist 2>&1 | tail -8
cd $OUT && rm -f r134a.tgz && tar czf r134.tgz r134 && rm -rf r134
