# Session 12, run 79: Numba norm exchange through distributed shared memory with the fold
# specialised per path (working tree) vs through `stats` in L2 (HEAD f521a21, .exp/old); old /
# new alternated twice, Numba only; then the Numba multi-CTA GPU tests.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r79; mkdir -p $R
B="--ops layernorm_bwd,rmsnorm_bwd,layernorm_fwd,rmsnorm_fwd --dtypes bf16,fp32 --sizes 32768,65536,131072 --backends numba --no-torch --no-liger --no-jit --no-host --time-budget 40 --target-ms 6"
for k in 1 2; do
  (cd .exp/old && PYTHONPATH=/tmp/site:$PWD timeout 60 python3 perf/bench.py --out $R/old$k $B > $R/old$k.txt 2>&1)
  PYTHONPATH=/tmp/site:$PWD timeout 60 python3 perf/bench.py --out $R/new$k $B > $R/new$k.txt 2>&1
done
for f in old1 new1; do echo "== $f"; grep -E "^copy|x(32768|65536|131072) +(nvrtc|numba)" $R/$f.txt | sed -e 's/  */ /g' -e 's/ ne[0-9]* ldgs[0-9]*//' -e 's/ - ok//' -e 's/ partials_MB=[0-9.]*//' | grep -v "cpr1 " | cut -c1-80 | head -30; done
PYTHONPATH=/tmp/site:$PWD timeout 120 python3 -m pytest -q -m gpu -p no:cacheprovider -p xdist -n 8 tests/gpu/test_numba_norms_gpu.py tests/gpu/test_fp8_gpu.py -rfE 2>&1 | tail -n 4 | tee $R/tests.log
cd $OUT && tar czf r79.tgz r79 && rm -rf r79
