# Session 17, run 112: A/B, alternated twice, b2c0a9b (.exp/old: old kernels, old tables) against
# this tree (the scaled / masked forward without the per-column test where a thread's slice lies
# inside the row, NVRTC and Numba; twelve softmax forward entries from run 111's sweep):
# (1) NVRTC, scaled and masked forwards, bf16 / fp16 / fp32, 1024-131072 keys; (2) Numba, the
# same ops and dtypes at 2048 / 8192 / 32768 / 131072 keys.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r112; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
AB="--no-torch --no-stream --no-jit --no-host --no-liger --target-ms 5"
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=60 bash perf/ab_bench.sh $R/abnv --ops softmax_fwd,masked_softmax_fwd --dtypes bf16,fp16,fp32 --sizes 1024,2048,4096,8192,16384,32768,131072 $AB --backends nvrtc --time-budget 50
cut -c1-110 $R/abnv/summary.csv
(cd $OUT && tar czf r112a.tgz r112)
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=110 bash perf/ab_bench.sh $R/abnb --ops softmax_fwd,masked_softmax_fwd --dtypes bf16,fp16,fp32 --sizes 2048,8192,32768,131072 $AB --backends numba --time-budget 100
cut -c1-110 $R/abnb/summary.csv
cd $OUT && rm -f r112a.tgz && tar czf r112.tgz r112 && rm -rf r112
