# Session 22, run 141: ncu after the fold. (1) rmsnorm_fwd bf16 -> e4m3 65536, NVRTC (now folded)
# against run 138's counts; (2) rmsnorm_fwd fp16 8192 (run 139: 0.52x folded), NVRTC with and
# without the fold (prof141.py adds the shape to RMS_FOLDED in its process).
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r141; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section SchedulerStats --section WarpStateStats --section InstructionStats --section LaunchStats"
one() {  # tag, prof args
  tag=$1; shift
  python3 .exp/prof141.py 20 "$@" 2>&1 | tail -1 | tee $R/time_$tag.txt
  timeout 100 $NCU --clock-control none -k regex:norm_fwd -s 3 -c 1 $S python3 .exp/prof141.py 1 "$@" > $R/ncu_$tag.txt 2> $R/ncu_$tag.err
  echo "$tag ncu rc=$?"; grep -E "Duration|Executed Instructions  |Local Memory Spilling Requests  |DRAM Throughput|Registers Per" $R/ncu_$tag.txt
}
one fp8_65536 bf16 e4m3 65536 0
one fp16_8192_exch fp16 same 8192 0
one fp16_8192_fold fp16 same 8192 1
timeout 100 $NCU --clock-control none -k regex:norm_fwd -s 3 -c 1 --section SourceCounters --page source --print-source sass --csv python3 .exp/prof141.py 1 bf16 e4m3 65536 0 > $R/src_fp8_65536.csv 2> $R/src.err; gzip $R/src_fp8_65536.csv
cd $OUT && tar czf r141.tgz r141 && rm -rf r141
