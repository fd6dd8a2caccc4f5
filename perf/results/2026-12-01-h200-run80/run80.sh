# Session 12, run 80: Numba softmax cluster exchange through distributed shared memory (working
# tree) vs through `stats` in L2 (HEAD bfa1338, .exp/old), old / new / old / new; then the Numba
# softmax GPU tests.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r80; mkdir -p $R
B="--ops softmax_fwd,softmax_bwd --dtypes bf16,fp32 --sizes 32768,65536,131072 --backends numba --no-torch --no-liger --no-jit --no-host --time-budget 22 --target-ms 5"
for k in 1 2; do
  (cd .exp/old && PYTHONPATH=/tmp/site:$PWD timeout 35 python3 perf/bench.py --out $R/old$k $B > $R/old$k.txt 2>&1)
  PYTHONPATH=/tmp/site:$PWD timeout 35 python3 perf/bench.py --out $R/new$k $B > $R/new$k.txt 2>&1
done
for f in old1 new1 old2 new2; do echo "== $f"; grep -E "x(32768|65536|131072) +numba" $R/$f.txt | sed -e 's/  */ /g' -e 's/ ne[0-9]* ldgs[0-9]*//' -e 's/ - ok//' | grep -v "cpr1 " | cut -c1-80; done
PYTHONPATH=/tmp/site:$PWD timeout 60 python3 -m pytest -q -m gpu -p no:cacheprovider -p xdist -n 8 tests/gpu/test_numba_softmax_gpu.py -rfE 2>&1 | tail -n 3 | tee $R/tests.log
cd $OUT && tar czf r80.tgz r80 && rm -rf r80
