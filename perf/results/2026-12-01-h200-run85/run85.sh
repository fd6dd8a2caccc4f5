# Session 13, run 85: the measured tables with runs 82-84's multi-CTA winners merged (working
# tree: norm backwards bf16 / fp16 32768 / 65536, NVRTC and Numba-own entries; softmax forward /
# backward / masked at 32768 / 131072 keys) vs HEAD 37789ec's tables (.exp/old), both backends,
# alternated twice; then the whole GPU suite on the working tree.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r85; mkdir -p $R
B="--ops layernorm_bwd,rmsnorm_bwd,softmax_fwd,softmax_bwd,masked_softmax_fwd --dtypes bf16,fp16,fp32 --sizes 32768,65536,131072 --no-torch --no-liger --no-jit --no-host --time-budget 55 --target-ms 4"
for k in 1 2; do
  (cd .exp/old && PYTHONPATH=/tmp/site:$PWD timeout 75 python3 perf/bench.py --out $R/old$k $B > $R/old$k.txt 2>&1)
  PYTHONPATH=/tmp/site:$PWD timeout 75 python3 perf/bench.py --out $R/new$k $B > $R/new$k.txt 2>&1
done
export PYTHONPATH=/tmp/site:$PWD
python3 perf/ab_summary.py $R > $R/summary.csv 2>&1
awk -F, 'NR>1 && ($7 > 1.02 || $7 < 0.98)' $R/summary.csv | cut -c1-120
grep -c . $R/summary.csv; grep -h "skipping\|budget" $R/*.txt | head -5
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 230 bash perf/gpu_suite.sh tests tests tests/gpu -rfE --maxfail=25 -p xdist > $R/suite.log 2>&1
tail -n 6 $R/suite.log
cd $OUT && tar czf r85.tgz r85 && rm -rf r85
