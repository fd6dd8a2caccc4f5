# Session 13, run 83: the norm backwards' multi-CTA shapes (now cluster launches) re-swept with
# the software pipeline on every shape (tune_norms.py --shape-prefetch; run 81 tried it on the
# top 2 only), bf16 / fp16, 32768 / 65536; then the Numba kernels on the sweep's fastest shapes.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r83; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
timeout 260 python3 perf/tune_norms.py --out $R/nvrtc --ops layernorm_bwd rmsnorm_bwd --dtypes bf16 fp16 --sizes 32768 65536 --top 2 --shape-prefetch --time-budget 220 --target-ms 8 > $R/nvrtc.log 2>&1
grep -E "best|skipping" $R/nvrtc.log | head -20
timeout 250 python3 perf/tune_norms.py --out $R/numba --backend numba --refine $R/nvrtc/tune.csv --ops layernorm_bwd rmsnorm_bwd --dtypes bf16 fp16 --sizes 32768 65536 --top 5 --time-budget 200 --target-ms 8 > $R/numba.log 2>&1
grep -E "best|skipping" $R/numba.log | head -20
cd $OUT && tar czf r83.tgz r83 && rm -rf r83
