# Session 21, run 136: the whole GPU test suite on the session's final kernels (softmax constant
# column step on both backends, kernel_key with multi_cta, Pack::get_again, the Numba-own
# layernorm_fwd bf16 32768 entry).
# The tree was commit 1790f01 (clean working tree).
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r136; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 400 bash perf/gpu_suite.sh tests tests tests/gpu -rfEs --maxfail=25 -p xdist 2>&1 | tail -8
cd $OUT && tar czf r136.tgz r136 && rm -rf r136
