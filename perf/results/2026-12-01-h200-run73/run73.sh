# Session 12, run 73: multi-CTA rows as thread-block clusters (barrier.cluster) vs the counter
# barrier (HEAD 1d9b97b, .exp/old): bench.py on the multi-CTA shapes, old / new / old / new,
# both backends; then the multi-CTA GPU tests of the new tree (plans now clusters).
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r73; mkdir -p $R
PYTHONPATH=/tmp/site:$PWD python3 -m numba_norms info > $R/info.txt 2>&1
BN="--ops layernorm_fwd,rmsnorm_fwd,layernorm_bwd,rmsnorm_bwd --dtypes bf16,fp32 --sizes 32768,65536 --no-torch --no-liger --no-jit --no-host --time-budget 55 --target-ms 8"
BS="--ops softmax_fwd,softmax_bwd --dtypes bf16 --sizes 32768,131072 --no-torch --no-liger --no-jit --no-host --time-budget 35 --target-ms 8"
for k in 1 2; do
  (cd .exp/old && PYTHONPATH=/tmp/site:$PWD timeout 80 python3 perf/bench.py --out $R/n_old$k $BN > $R/n_old$k.txt 2>&1)
  PYTHONPATH=/tmp/site:$PWD timeout 80 python3 perf/bench.py --out $R/n_new$k $BN > $R/n_new$k.txt 2>&1
  [ $k = 1 ] || continue
  (cd .exp/old && PYTHONPATH=/tmp/site:$PWD timeout 60 python3 perf/bench.py --out $R/s_old$k $BS > $R/s_old$k.txt 2>&1)
  PYTHONPATH=/tmp/site:$PWD timeout 60 python3 perf/bench.py --out $R/s_new$k $BS > $R/s_new$k.txt 2>&1
done
for f in n_old1 n_new1 n_old2 n_new2 s_old1 s_new1; do echo "== $f"; grep -E "^(layernorm|rmsnorm|softmax|copy)" $R/$f.txt | head -40; tail -n 2 $R/$f.txt; done
PYTHONPATH=/tmp/site:$PWD timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -p xdist -n 6 tests/gpu -k "multi" -rfE 2>&1 | tail -n 40 > $R/tests.log
tail -n 40 $R/tests.log
cd $OUT && tar czf r73.tgz r73 && rm -rf r73
