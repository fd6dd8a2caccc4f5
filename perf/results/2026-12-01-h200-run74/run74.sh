# Session 12, run 74: cluster grids sized by the driver's max-active-clusters count (the code)
# against sized by occupancy (.exp/nocap74.py), alternated twice, multi-CTA shapes, both
# backends; then the whole GPU suite on the working tree (cluster plans; the tests' counter
# variants force limits without clusters).
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache PYTHONPATH=/tmp/site:$PWD
R=$OUT/r74; mkdir -p $R
B="--ops layernorm_bwd,rmsnorm_bwd,layernorm_fwd,rmsnorm_fwd,softmax_fwd,softmax_bwd --dtypes bf16,fp32 --sizes 32768,65536,131072 --no-torch --no-liger --no-jit --no-host --time-budget 60 --target-ms 8"
for k in 1 2; do
  timeout 90 python3 perf/bench.py --out $R/cap$k $B > $R/cap$k.txt 2>&1
  timeout 90 python3 .exp/nocap74.py --out $R/occ$k $B > $R/occ$k.txt 2>&1
done
for f in cap1 occ1 cap2 occ2; do echo "== $f"; grep -E "^copy|x(32768|65536|131072) +(nvrtc|numba)" $R/$f.txt | sed -e 's/  */ /g' -e 's/ ne[0-9]* ldgs[0-9]*//' -e 's/ - ok//' | head -40; done
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 240 bash perf/gpu_suite.sh tests tests tests/gpu -rfE --maxfail=25 -p xdist > $R/suite.log 2>&1
tail -n 25 $R/suite.log
cd $OUT && tar czf r74.tgz r74 && rm -rf r74
