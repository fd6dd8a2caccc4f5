# Session 23, run 143: the same sweep as run 142 (tune_norms.py with the entry that serves now
# timed as the bar) on (a) the RMSNorm forwards not covered there (16-bit 768-7168, fp32 and
# fp32 -> e4m3 768-65536; --fold also) and (b) the LayerNorm forwards, 16-bit and 16-bit -> e4m3,
# 768-65536, whose entries predate session 20's kernels (no exchange, one address a row).
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r143; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
python3 perf/tune_norms.py --out $R/rms16 --ops rmsnorm_fwd --dtypes bf16 bf16-fp8 fp16 fp16-fp8 --sizes 768 1024 2048 2560 3584 5120 7168 --fold also --top 2 --target-ms 4 --time-budget 110 2>&1 | grep -v "^ *$" | tail -30 | tee $R/rms16.txt
python3 perf/tune_norms.py --out $R/rms32 --ops rmsnorm_fwd --dtypes fp32 fp32-fp8 --sizes 768 1024 2048 2560 3584 4096 5120 7168 8192 12288 16384 32768 65536 --fold also --top 2 --target-ms 4 --time-budget 110 2>&1 | grep -v "^ *$" | tail -28 | tee $R/rms32.txt
python3 perf/tune_norms.py --out $R/ln --ops layernorm_fwd --dtypes bf16 bf16-fp8 fp16 fp16-fp8 --sizes 768 1024 2048 2560 3584 4096 5120 7168 8192 12288 16384 32768 65536 --top 2 --target-ms 4 --time-budget 200 2>&1 | grep -v "^ *$" | tail -54 | tee $R/ln.txt
cd $OUT && tar czf r143.tgz r143 && rm -rf r143
