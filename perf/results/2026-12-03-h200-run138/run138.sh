# Session 22, run 138: (1) __restrict__ on the NVRTC softmax kernels' data pointers (dev box: no
# register / spill change in the 302 one-CTA bf16 kernels): A/B against 2b5cc18, NVRTC,
# alternated twice, every softmax op bf16 at 1024-131072 keys; (2) ncu of rmsnorm_fwd bf16 ->
# e4m3 16384 x 65536 on both backends (same plan; run 133: NVRTC 85.0%, Numba 99.3%); (3) the
# GPU tests of the NVRTC softmax.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r138; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for be in nvrtc numba; do
  if [ $be = numba ]; then export DISABLE_NVRTC=1; fi
  python3 .exp/prof138.py 20 > $R/time_$be.txt 2>&1; cat $R/time_$be.txt | tail -1
  timeout 100 $NCU --clock-control none -k regex:norm_fwd -s 3 -c 1 --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Chart --section SchedulerStats --section WarpStateStats --section InstructionStats --section Occupancy --section LaunchStats python3 .exp/prof138.py 1 > $R/ncu_$be.txt 2> $R/ncu_$be.err
  echo "$be ncu rc=$? $(wc -l < $R/ncu_$be.txt) lines"
  timeout 100 $NCU --clock-control none -k regex:norm_fwd -s 3 -c 1 --section SourceCounters --section WarpStateStats --page source --print-source sass --csv python3 .exp/prof138.py 1 > $R/src_$be.csv 2> $R/src_$be.err
  echo "$be src rc=$? $(wc -l < $R/src_$be.csv) lines"; gzip $R/src_$be.csv
done
unset DISABLE_NVRTC
(cd $OUT && tar czf r138a.tgz r138)
COMMON="--ops softmax --backends nvrtc --no-torch --no-stream --no-jit --no-host --no-liger --target-ms 4"
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=60 bash perf/ab_bench.sh $R/bf16 $COMMON --dtypes bf16 --sizes 1024,2048,4096,8192,16384,32768,131072 --time-budget 40
cut -c1-100 $R/bf16/summary.csv
(cd $OUT && rm -f r138a.tgz && tar czf r138b.tgz r138)
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 130 bash perf/gpu_suite.sh tests tests/gpu/test_nvrtc_softmax_gpu.py tests/gpu/test_softmax_api_gpu.py -q -x -p xdist 2>&1 | grep -E "passed|failed|error" | tail -3
cd $OUT && rm -f r138b.tgz && tar czf r138.tgz r138 && rm -rf r138
