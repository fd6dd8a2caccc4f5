# Numba-side sweeps on NVRTC's best launch shapes (session 8, run 45)
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD NUMBA_NORMS_CACHE_DIR=/tmp/nnc PYTHONUNBUFFERED=1
R=perf/results/2026-11-30-h200-
NREF="${R}run5/tune.csv ${R}run22/sweep/tune.csv ${R}run24/sweep/tune.csv"
SREF="${R}run28/tune.csv ${R}run28/fp32-fp16/tune.csv ${R}run31/tune.csv ${R}run38/tune_masked_causal.csv ${R}run41/tune.csv"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/info.txt
timeout 250 python3 perf/tune_norms.py --out $OUT/nb --backend numba --refine $NREF --top 5 --ops layernorm_bwd rmsnorm_bwd --dtypes bf16 fp16 fp32 --sizes 1024 4096 8192 12288 16384 32768 65536 --time-budget 215 > $OUT/nb.log 2>&1
timeout 100 python3 perf/tune_softmax.py --out $OUT/sb --backend numba --refine $SREF --top 5 --ops softmax_bwd --dtypes bf16 fp16 fp32 --keys 16384 32768 131072 --time-budget 75 > $OUT/sb.log 2>&1
timeout 130 python3 perf/tune_softmax.py --out $OUT/sf --backend numba --refine $SREF --top 5 --ops masked_softmax_fwd upper_triang_softmax_fwd softmax_fwd --dtypes bf16 fp16 fp32 --keys 1024 2048 4096 8192 16384 --time-budget 100 > $OUT/sf.log 2>&1
cd $OUT && tar czf run45.tgz nb sb sf && rm -rf nb sb sf
