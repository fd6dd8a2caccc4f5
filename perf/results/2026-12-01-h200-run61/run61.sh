# Session 10, run 61: A/B of run 60's backward winners (current table, then .exp/cand61.json),
# both backends, 3 dtypes, 768-8192; then the whole GPU suite on the candidate table
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
mkdir -p $OUT/a $OUT/b $OUT/suite
BA="--ops layernorm_bwd,rmsnorm_bwd --dtypes bf16,fp16,fp32 --sizes 768,1024,2048,2560,3584,4096,5120,7168,8192 --no-liger --no-jit --no-host --target-ms 5"
timeout 130 python3 perf/bench.py --out $OUT/a --no-torch --time-budget 110 $BA > $OUT/a/console.txt 2>&1
cp .exp/cand61.json numba_norms/data/measured_norms.json
timeout 150 python3 perf/bench.py --out $OUT/b --time-budget 130 $BA > $OUT/b/console.txt 2>&1
grep -A12 SUMMARY $OUT/a/console.txt | head -12; grep -A12 SUMMARY $OUT/b/console.txt | head -14
GPU_TEST_WORKERS=12 OUT=$OUT/suite timeout 225 bash perf/gpu_suite.sh tests tests tests/gpu -rfE --maxfail=25 -p xdist > $OUT/tests61.log 2>&1
tail -n 6 $OUT/tests61.log
cd $OUT && tar czf run61.tgz a b suite && rm -rf a b suite
