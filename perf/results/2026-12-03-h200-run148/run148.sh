# Session 23, run 148: GPU tests of the Numba backend's measured entries after run 147's winners
# were merged (its own FP8 entries through test_fp8_gpu, the rest through test_measured_gpu).
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r148; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 200 bash perf/gpu_suite.sh tests tests/gpu/test_fp8_gpu.py tests/gpu/test_measured_gpu.py -rfEs -p xdist -k numba 2>&1 | grep -E "passed|failed|FAILED|ERROR" | tail -20
cd $OUT && tar czf r148.tgz r148 && rm -rf r148
