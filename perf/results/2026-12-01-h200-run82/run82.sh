# Session 13, run 82 (after run 81 on the same machine): the softmax forward's multi-CTA shapes
# re-swept now that such rows run as clusters (bf16 / fp32, 32768 / 131072 keys); the whole GPU
# suite on the working tree (masked softmax forward in mask-row-major order).
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r82; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
timeout 170 python3 perf/tune_softmax.py --out $R/tune_softmax --ops softmax_fwd --dtypes bf16 fp32 --keys 32768 131072 --top 2 --time-budget 140 > $R/tune_softmax.log 2>&1
tail -n 12 $R/tune_softmax.log
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 230 bash perf/gpu_suite.sh tests tests tests/gpu -rfE --maxfail=25 -p xdist > $R/suite.log 2>&1
tail -n 6 $R/suite.log
cd $OUT && tar czf r82.tgz r82 && rm -rf r82
