# Session 23, run 142: NormConfig.fold (the one-CTA RMSNorm forward without the exchange, one
# address a row) is a per-entry field now; tune_norms.py --fold also times each one-CTA shape
# folded and unfolded, and times the entry that serves now ("current") as the bar. Sweep of
# rmsnorm_fwd bf16 / bf16->e4m3 / fp16 / fp16->e4m3 at 4096-65536 (the 16-bit sizes below 95%).
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r142; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
python3 perf/tune_norms.py --out $R/sweep --ops rmsnorm_fwd --dtypes bf16 bf16-fp8 fp16 fp16-fp8 --sizes 4096 8192 12288 16384 32768 65536 --fold also --top 2 --target-ms 4 --time-budget 470 2>&1 | grep -v "^ *$" | tail -40
cd $OUT && tar czf r142.tgz r142 && rm -rf r142
