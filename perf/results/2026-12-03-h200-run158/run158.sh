# Session 26, run 158 (tree 093cfcc): the whole GPU suite, re-running the six tests session 25
# fixed on the CPU only (test_fp8_gpu torch_float8, test_nvrtc_norms_gpu multi_cta).
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r158; mkdir -p $R
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 320 bash perf/gpu_suite.sh tests tests/gpu -rfEs --maxfail=25 -p xdist 2>&1 | tail -12
cd $OUT && tar czf r158.tgz r158 && rm -rf r158
