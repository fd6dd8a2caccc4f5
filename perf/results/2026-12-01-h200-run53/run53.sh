# Session 9, run 53: NVRTC sweep of the fp16 -> fp8 and fp32 -> fp8 forwards (no measured entries
# yet: 33-68% of the ceiling at 12288+ in run 49)
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
mkdir -p $OUT/sw
timeout 330 python3 perf/tune_norms.py --out $OUT/sw --ops layernorm_fwd rmsnorm_fwd --dtypes fp16-fp8 fp32-fp8 --sizes 16384 32768 65536 12288 8192 4096 --top 2 --time-budget 300 > $OUT/sw.log 2>&1
tail -n 30 $OUT/sw.log
