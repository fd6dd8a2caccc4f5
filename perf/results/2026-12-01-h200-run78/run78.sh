# Session 12, run 78: cluster exchange through distributed shared memory (NVRTC norms and
# softmax, Numba norms; working tree) vs through `stats` in L2 (HEAD f521a21, .exp/old), both
# with the cluster barrier; old / new alternated twice, both backends; then the whole GPU suite.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r78; mkdir -p $R
B="--ops layernorm_bwd,rmsnorm_bwd,layernorm_fwd,rmsnorm_fwd,softmax_fwd,softmax_bwd --dtypes bf16,fp32 --sizes 32768,65536,131072 --no-torch --no-liger --no-jit --no-host --time-budget 55 --target-ms 6"
for k in 1 2; do
  (cd .exp/old && PYTHONPATH=/tmp/site:$PWD timeout 80 python3 perf/bench.py --out $R/old$k $B > $R/old$k.txt 2>&1)
  PYTHONPATH=/tmp/site:$PWD timeout 80 python3 perf/bench.py --out $R/new$k $B > $R/new$k.txt 2>&1
done
for f in old1 new1; do echo "== $f"; grep -E "^copy|x(32768|65536|131072) +(nvrtc|numba)" $R/$f.txt | sed -e 's/  */ /g' -e 's/ ne[0-9]* ldgs[0-9]*//' -e 's/ - ok//' -e 's/ partials_MB=[0-9.]*//' | grep -v "cpr1 " | cut -c1-90 | head -60; done
export PYTHONPATH=/tmp/site:$PWD
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 230 bash perf/gpu_suite.sh tests tests tests/gpu -rfE --maxfail=25 -p xdist > $R/suite.log 2>&1
tail -n 6 $R/suite.log
cd $OUT && tar czf r78.tgz r78 && rm -rf r78
