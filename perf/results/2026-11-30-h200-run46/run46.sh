# Numba-side sweeps, second part (session 8, run 46): norm forwards, the other softmax lengths
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD NUMBA_NORMS_CACHE_DIR=/tmp/nnc PYTHONUNBUFFERED=1
R=perf/results/2026-11-30-h200-
NREF="${R}run5/tune.csv ${R}run22/sweep/tune.csv ${R}run24/sweep/tune.csv"
SREF="${R}run28/tune.csv ${R}run28/fp32-fp16/tune.csv ${R}run31/tune.csv ${R}run38/tune_masked_causal.csv ${R}run41/tune.csv"
timeout 250 python3 perf/tune_norms.py --out $OUT/nf --backend numba --refine $NREF --top 5 --ops layernorm_fwd rmsnorm_fwd --dtypes bf16 fp16 fp32 bf16-fp8 --sizes 1024 4096 8192 12288 16384 32768 65536 --time-budget 220 > $OUT/nf.log 2>&1
timeout 80 python3 perf/tune_softmax.py --out $OUT/sb2 --backend numba --refine $SREF --top 5 --ops softmax_bwd --dtypes bf16 fp16 fp32 --keys 512 1024 2048 4096 8192 --time-budget 60 > $OUT/sb2.log 2>&1
timeout 110 python3 perf/tune_softmax.py --out $OUT/sf2 --backend numba --refine $SREF --top 5 --ops masked_softmax_fwd upper_triang_softmax_fwd softmax_fwd --dtypes bf16 fp16 fp32 --keys 512 32768 131072 --time-budget 85 > $OUT/sf2.log 2>&1
cd $OUT && tar czf run46.tgz nf sb2 sf2 && rm -rf nf sb2 sf2
