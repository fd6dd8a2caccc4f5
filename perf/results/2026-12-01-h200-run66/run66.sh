# Session 11, run 66: every kernel starts with the griddepcontrol prologue and is launched as a
# programmatic dependent on sm_90 (main kernels with one CTA a row, the backward's finalize).
# 1) same-process chain timing (plain vs PDL launches of the same kernels), both backends;
# 2) bench A/B: HEAD 4b35291 (.exp/old, no PDL) vs the working tree, bf16, both backends;
# 3) the whole GPU suite.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
mkdir -p $OUT/r66/a $OUT/r66/b
PYTHONPATH=/tmp/site:$PWD timeout 170 python3 .exp/chain66.py > $OUT/r66/chain66.txt 2>&1
cat $OUT/r66/chain66.txt
NB="--ops layernorm_fwd,rmsnorm_fwd,layernorm_bwd,rmsnorm_bwd --dtypes bf16 --sizes 768,1024,2048,4096,8192 --no-liger --no-jit --no-host --time-budget 50 --target-ms 6"
SB="--ops softmax_fwd,softmax_bwd --dtypes bf16 --sizes 128,512,1024,2048 --no-liger --no-jit --no-host --time-budget 40 --target-ms 6"
(cd .exp/old && export PYTHONPATH=/tmp/site:$PWD && timeout 75 python3 perf/bench.py --out $OUT/r66/a/n --no-torch $NB > $OUT/r66/a/n.txt 2>&1; timeout 60 python3 perf/bench.py --out $OUT/r66/a/s --no-torch $SB > $OUT/r66/a/s.txt 2>&1)
export PYTHONPATH=/tmp/site:$PWD
timeout 75 python3 perf/bench.py --out $OUT/r66/b/n --no-torch $NB > $OUT/r66/b/n.txt 2>&1
timeout 60 python3 perf/bench.py --out $OUT/r66/b/s --no-torch $SB > $OUT/r66/b/s.txt 2>&1
grep -h -A12 SUMMARY $OUT/r66/a/*.txt $OUT/r66/b/*.txt
GPU_TEST_WORKERS=12 OUT=$OUT/r66/suite timeout 200 bash perf/gpu_suite.sh tests tests tests/gpu -rfE --maxfail=25 -p xdist > $OUT/r66/suite.txt 2>&1
tail -n 25 $OUT/r66/suite.txt
cd $OUT && tar czf r66.tgz r66 && rm -rf r66
