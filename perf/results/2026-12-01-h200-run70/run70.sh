# Session 11, run 70: after rtc.Launcher moved every launch to cuLaunchKernelEx:
# the launcher micro-benchmark (run 69's script), host cost old (HEAD 4b35291) / new alternated
# twice, the whole GPU suite on the final code.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r70; mkdir -p $R
PYTHONPATH=/tmp/site:$PWD timeout 60 python3 .exp/launch69.py 2>&1 | tee $R/launch70.txt
HA="--ops layernorm_fwd --dtypes bf16 --sizes 4096 --no-liger --no-jit --target-ms 2 --time-budget 100"
for k in 1 2; do
  (cd .exp/old && PYTHONPATH=/tmp/site:$PWD timeout 80 python3 perf/bench.py --out $R/host_old$k $HA > $R/host_old$k.txt 2>&1)
  PYTHONPATH=/tmp/site:$PWD timeout 80 python3 perf/bench.py --out $R/host_new$k $HA > $R/host_new$k.txt 2>&1
done
for k in 1 2; do for t in old new; do echo "== $t$k"; grep -A14 "HOST COST" $R/host_$t$k.txt | tail -13; done; done
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 230 bash perf/gpu_suite.sh tests tests tests/gpu -rfE --maxfail=25 -p xdist > $R/suite.txt 2>&1
tail -n 4 $R/suite.txt
cd $OUT && tar czf r70.tgz r70 && rm -rf r70
