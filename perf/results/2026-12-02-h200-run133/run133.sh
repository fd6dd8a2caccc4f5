# Session 21, run 133: (1) the Numba softmax kernels with the CTA count (so the column step) a
# closure constant in one-CTA builds, A/B against HEAD's (2905fd8), alternated twice, bf16 every
# softmax op at 1024-32768 keys; (2) the norms on both backends beside torch eager, bf16,
# 4096-65536 (Numba against the faster NVRTC LayerNorm of run 130); (3) the GPU tests of the
# Numba softmax and the softmax API.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r133; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=170 bash perf/ab_bench.sh $R/numba_softmax --ops softmax --backends numba --no-torch --no-stream --no-jit --no-host --no-liger --target-ms 4 --dtypes bf16 --sizes 1024,2048,4096,8192,16384,32768 --time-budget 40
cut -c1-100 $R/numba_softmax/summary.csv
(cd $OUT && tar czf r133a.tgz r133)
timeout 220 python3 perf/bench.py --out $R/norms --ops layernorm,rmsnorm --backends nvrtc,numba --dtypes bf16 --sizes 4096,8192,16384,32768,65536 --no-stream --no-jit --no-host --no-liger --target-ms 4 --time-budget 80 > $R/norms.txt 2>&1
grep -v "^ *$" $R/norms.txt | cut -c1-110 | tail -40
(cd $OUT && rm -f r133a.tgz && tar czf r133b.tgz r133)
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 130 bash perf/gpu_suite.sh tests tests/gpu/test_numba_softmax_gpu.py tests/gpu/test_softmax_api_gpu.py -q -x -p xdist 2>&1 | tail -3
cd $OUT && rm -f r133b.tgz && tar czf r133.tgz r133 && rm -rf r133
