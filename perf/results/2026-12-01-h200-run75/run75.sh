# Session 12, run 75: softmax rows of several CTAs, counter barrier (HEAD 1d9b97b, .exp/old) vs
# cluster row groups (working tree), old / new / old / new, both backends, three dtypes.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r75; mkdir -p $R
B="--ops softmax_fwd,softmax_bwd --dtypes bf16,fp16,fp32 --sizes 32768,65536,131072 --no-torch --no-liger --no-jit --no-host --time-budget 50 --target-ms 8"
for k in 1 2; do
  (cd .exp/old && PYTHONPATH=/tmp/site:$PWD timeout 80 python3 perf/bench.py --out $R/old$k $B > $R/old$k.txt 2>&1)
  PYTHONPATH=/tmp/site:$PWD timeout 80 python3 perf/bench.py --out $R/new$k $B > $R/new$k.txt 2>&1
done
for f in old1 new1 old2 new2; do echo "== $f"; grep -E "^copy|x(32768|65536|131072) +(nvrtc|numba)" $R/$f.txt | sed -e 's/  */ /g' -e 's/ ne[0-9]* ldgs[0-9]*//' -e 's/ - ok//' | grep -v "cpr1 " | head -40; done
cd $OUT && tar czf r75.tgz r75 && rm -rf r75
