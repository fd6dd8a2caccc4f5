# Session 12, run 77: NVRTC cluster exchange through distributed shared memory (working tree)
# vs through `stats` in L2 (HEAD f521a21, .exp/old), both with the cluster barrier; old / new
# alternated twice on the multi-CTA shapes; then the NVRTC multi-CTA GPU tests.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r77; mkdir -p $R
B="--ops layernorm_bwd,rmsnorm_bwd,layernorm_fwd,rmsnorm_fwd,softmax_fwd,softmax_bwd --dtypes bf16,fp32 --sizes 32768,65536,131072 --backends nvrtc --no-torch --no-liger --no-jit --no-host --time-budget 45 --target-ms 8"
for k in 1 2; do
  (cd .exp/old && PYTHONPATH=/tmp/site:$PWD timeout 70 python3 perf/bench.py --out $R/old$k $B > $R/old$k.txt 2>&1)
  PYTHONPATH=/tmp/site:$PWD timeout 70 python3 perf/bench.py --out $R/new$k $B > $R/new$k.txt 2>&1
done
for f in old1 new1 old2 new2; do echo "== $f"; grep -E "^copy|x(32768|65536|131072) +(nvrtc|numba)" $R/$f.txt | sed -e 's/  */ /g' -e 's/ ne[0-9]* ldgs[0-9]*//' -e 's/ - ok//' | grep -v "cpr1 " | head -30; done
PYTHONPATH=/tmp/site:$PWD timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider -p xdist -n 8 tests/gpu/test_nvrtc_norms_gpu.py tests/gpu/test_nvrtc_softmax_gpu.py tests/gpu/test_norms_api_gpu.py -rfE 2>&1 | tail -n 8 | tee $R/tests.log
cd $OUT && tar czf r77.tgz r77 && rm -rf r77
