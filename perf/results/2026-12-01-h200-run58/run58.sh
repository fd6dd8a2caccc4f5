# Session 9, run 58: GPU tests after the outputs review (_out.outputs, _softmax_output)
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
timeout 170 python3 -m pytest -q -m gpu -p no:cacheprovider -p xdist -n 14 tests/gpu/test_fast_path_gpu.py tests/gpu/test_torch_gpu.py tests/gpu/test_norms_api_gpu.py tests/gpu/test_softmax_api_gpu.py tests/gpu/test_arrays_gpu.py tests/gpu/test_fp8_gpu.py -rfE > $OUT/tests58.log 2>&1
tail -n 3 $OUT/tests58.log
