# Session 15, run 100: A/B of b50a624 (.exp/old) against four persistent RMSNorm forward entries
# merged from the sweeps of runs 95 / 96 (sizes without a measured entry: bf16 / fp16 5120, fp16
# 7168; and bf16 16384, where Liger ran 1.07x ours in run 99), both backends, alternated twice;
# then the NVRTC measured-entry tests of rmsnorm_fwd.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r100; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=28 bash perf/ab_bench.sh $R/ab --ops rmsnorm_fwd --dtypes bf16,fp16 --sizes 5120,7168,16384 --no-torch --no-stream --no-jit --no-host --no-liger --target-ms 5 --time-budget 22
cut -c1-120 $R/ab/summary.csv
(cd $OUT && tar czf r100a.tgz r100)
timeout 40 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_measured_gpu.py -k "rmsnorm_fwd and nvrtc and (5120 or 7168 or 16384)" -x > $R/measured_tests.log 2>&1
tail -n 2 $R/measured_tests.log
cd $OUT && rm -f r100a.tgz && tar czf r100.tgz r100 && rm -rf r100
