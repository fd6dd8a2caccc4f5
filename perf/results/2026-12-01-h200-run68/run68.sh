# Session 11, run 68: host cost per call before (HEAD 4b35291, .exp/old: cuLaunchKernel) and
# after launch chaining (cuLaunchKernelEx for programmatic launches), alternated twice
# (bench.py's host section; one small throughput row each); then the whole GPU suite on 454bd9d.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r68; mkdir -p $R
HA="--ops layernorm_fwd --dtypes bf16 --sizes 4096 --no-liger --no-jit --target-ms 2 --time-budget 100"
for k in 1 2; do
  (cd .exp/old && PYTHONPATH=/tmp/site:$PWD timeout 80 python3 perf/bench.py --out $R/host_old$k $HA > $R/host_old$k.txt 2>&1)
  PYTHONPATH=/tmp/site:$PWD timeout 80 python3 perf/bench.py --out $R/host_new$k $HA > $R/host_new$k.txt 2>&1
done
for k in 1 2; do for t in old new; do echo "== $t$k"; grep -A40 "HOST COST" $R/host_$t$k.txt | head -45; done; done
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 220 bash perf/gpu_suite.sh tests tests tests/gpu -rfE --maxfail=25 -p xdist > $R/suite.txt 2>&1
tail -n 4 $R/suite.txt
cd $OUT && tar czf r68.tgz r68 && rm -rf r68
