# Session 13, run 86: the whole GPU suite on the working tree at efb8004 (the re-swept multi-CTA tables, the
# softmax GPU tests that now derive CTAs a row from the entry); then bench.py with torch eager
# on the re-swept shapes.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r86; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 230 bash perf/gpu_suite.sh tests tests tests/gpu -rfE --maxfail=25 -p xdist > $R/suite.log 2>&1
tail -n 4 $R/suite.log
timeout 150 python3 perf/bench.py --out $R/bench --ops layernorm_bwd,rmsnorm_bwd,softmax_fwd,softmax_bwd --dtypes bf16,fp16 --sizes 32768,65536,131072 --no-liger --no-jit --no-host --time-budget 120 --target-ms 4 > $R/bench.txt 2>&1
grep -E "^copy|x(32768|65536|131072) +(nvrtc|numba|torch)" $R/bench.txt | sed -e 's/  */ /g' | cut -c1-110
cd $OUT && tar czf r86.tgz r86 && rm -rf r86
