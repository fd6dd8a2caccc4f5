# Session 13, run 84 (after run 83 on the same machine): the softmax multi-CTA shapes (cluster
# launches since session 12) re-swept: backward bf16 / fp16 / fp32, masked forward bf16 / fp16
# / fp32, plain forward fp16 (run 82 swept bf16 / fp32), 32768 / 131072 keys.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r84; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
timeout 250 python3 perf/tune_softmax.py --out $R/bwd --ops softmax_bwd masked_softmax_fwd --dtypes bf16 fp16 fp32 --keys 32768 131072 --top 2 --time-budget 210 > $R/bwd.log 2>&1
tail -n 14 $R/bwd.log
timeout 100 python3 perf/tune_softmax.py --out $R/fwd16 --ops softmax_fwd --dtypes fp16 --keys 32768 131072 --top 2 --time-budget 70 > $R/fwd16.log 2>&1
tail -n 4 $R/fwd16.log
cd $OUT && tar czf r84.tgz r84 && rm -rf r84
