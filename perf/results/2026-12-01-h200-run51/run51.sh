# Session 9, run 51: NVRTC RMSNorm forward without spills at 1 CTA x 32 warps (weights re-read
# where the lean row leaves < 16 registers): the fastest shapes of runs 46 (Numba) and 50 (NVRTC)
# re-timed at 32768 / 65536
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
mkdir -p $OUT/rf
timeout 200 python3 perf/tune_norms.py --out $OUT/rf --backend nvrtc --refine perf/results/2026-11-30-h200-run46/tune_norms_fwd_numba.csv perf/results/2026-12-01-h200-run50/tune_norms_fwd_nvrtc.csv --top 5 --ops rmsnorm_fwd layernorm_fwd --dtypes bf16 fp16 bf16-fp8 fp32 --sizes 32768 65536 --time-budget 170 > $OUT/rf.log 2>&1
tail -n 20 $OUT/rf.log
cp $OUT/rf/tune.csv $OUT/tune51.csv
