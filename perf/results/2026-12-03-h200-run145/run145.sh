# Session 23, run 145: the backward tables against the kernels of today, as runs 142-143 did for
# the forwards: tune_norms.py (the entry that serves now timed as the bar; every shape also with
# its dgamma / dbeta sums in shared memory) for layernorm_bwd / rmsnorm_bwd bf16 / fp16 at
# 4096-65536; the winners merged into this copy of the table, checked by the GPU tests of the
# measured entries (NVRTC), then a same-run A/B against 2f0aec7 (NVRTC, alternated twice).
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r145; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
python3 perf/tune_norms.py --out $R/bwd --ops layernorm_bwd rmsnorm_bwd --dtypes bf16 fp16 --sizes 4096 8192 16384 32768 65536 --wgrad-smem also --top 2 --target-ms 4 --time-budget 230 2>&1 | grep -v "^ *$" | tail -24 | tee $R/bwd.txt
cp numba_norms/data/measured_norms.json $R/table_before.json
python3 perf/merge_measured.py $R/bwd/measured_norms.json --run r145
(cd $OUT && tar czf r145a.tgz r145)
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_measured_gpu.py -k "nvrtc and bwd" 2>&1 | tail -2
COMMON="--backends nvrtc --no-torch --no-stream --no-jit --no-host --no-liger --target-ms 4"
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=70 bash perf/ab_bench.sh $R/ab --ops layernorm_bwd,rmsnorm_bwd --dtypes bf16,fp16 --sizes 4096,8192,16384,32768,65536 $COMMON --time-budget 45
cut -c1-100 $R/ab/summary.csv
cd $OUT && rm -f r145a.tgz && tar czf r145.tgz r145 && rm -rf r145
