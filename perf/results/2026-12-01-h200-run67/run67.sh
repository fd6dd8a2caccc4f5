# Session 11, run 67: launch chaining A/B across trees, alternated (old, new, old, new):
# perf/chain_timing.py (back-to-back calls) with HEAD 4b35291's package (.exp/old: no prologue,
# plain launches) and with the working tree's (prologue; pdl = programmatic launches), both
# backends; then bench.py's per-call event timing of the forwards, old/new/old/new, NVRTC.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r67; mkdir -p $R
CT="--sizes 768,4096,8192 --softmax-sizes 128,256,512"
for k in 1 2; do
  PYTHONPATH=/tmp/site:$PWD/.exp/old timeout 100 python3 perf/chain_timing.py $CT --out $R/chain_old$k.csv > $R/chain_old$k.txt 2>&1
  PYTHONPATH=/tmp/site:$PWD timeout 100 python3 perf/chain_timing.py $CT --out $R/chain_new$k.csv > $R/chain_new$k.txt 2>&1
done
paste $R/chain_old1.txt $R/chain_new1.txt | cut -c1-150
tail -n 3 $R/chain_old2.txt $R/chain_new2.txt
BA="--ops layernorm_fwd,rmsnorm_fwd --dtypes bf16 --sizes 768,4096,8192 --backends nvrtc --no-torch --no-liger --no-jit --no-host --time-budget 30 --target-ms 6"
for k in 1 2; do
  (cd .exp/old && PYTHONPATH=/tmp/site:$PWD timeout 45 python3 perf/bench.py --out $R/bench_old$k $BA > $R/bench_old$k.txt 2>&1)
  PYTHONPATH=/tmp/site:$PWD timeout 45 python3 perf/bench.py --out $R/bench_new$k $BA > $R/bench_new$k.txt 2>&1
done
grep -h "nvrtc " $R/bench_*.txt | head -30
cd $OUT && tar czf r67.tgz r67 && rm -rf r67
