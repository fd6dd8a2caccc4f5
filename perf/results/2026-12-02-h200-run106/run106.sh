# Session 16, run 106: A/B, both backends, alternated twice: c62bf63 (.exp/old) against two more
# entries (fp32 rmsnorm_fwd 12288 on the grid of all rows, run 105; bf16 -> FP8 layernorm_fwd
# 4096, run 103's winner, where NVRTC ran 81 us against Numba's 63.8 in run 104); then the
# measured-entry GPU tests (norms, both backends) and the softmax GPU tests on the final tables.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r106; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
AB="--no-torch --no-stream --no-jit --no-host --no-liger --target-ms 5"
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=32 bash perf/ab_bench.sh $R/ab --ops rmsnorm_fwd,layernorm_fwd_fp8 --dtypes bf16,fp32 --sizes 4096,12288 $AB --time-budget 24
cut -c1-120 $R/ab/summary.csv
(cd $OUT && tar czf r106a.tgz r106)
timeout 170 python3 -m pytest -q -p no:cacheprovider -p xdist -n 12 tests/gpu/test_measured_gpu.py tests/gpu/test_numba_softmax_gpu.py tests/gpu/test_nvrtc_softmax_gpu.py -rfE > $R/tests.log 2>&1
tail -n 6 $R/tests.log
cd $OUT && rm -f r106a.tgz && tar czf r106.tgz r106 && rm -rf r106
