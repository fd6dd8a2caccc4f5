# Session 19, run 126: ncu's per-instruction (SASS) counters of the FP8-output LayerNorm forward
# (bf16 -> e4m3, 16384 x 8192) on both backends, for reading offline: run 125 showed the NVRTC
# kernel executing 16% more instructions at 11% more cycles an instruction, same plan.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r126; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for be in nvrtc numba; do
  if [ $be = numba ]; then export DISABLE_NVRTC=1; fi
  timeout 100 $NCU --clock-control none -k regex:norm_fwd -s 3 -c 1 --section SourceCounters --section WarpStateStats --section InstructionStats --page source --print-source sass --csv python3 .exp/prof125.py 1 > $R/src_$be.csv 2> $R/src_$be.err
  echo "$be ncu rc=$? $(wc -l < $R/src_$be.csv) lines"
done
head -c 600 $R/src_nvrtc.csv
cd $OUT && tar czf r126.tgz r126 && rm -rf r126
