# Session 14, run 89: the whole GPU suite on 35823d0's tree (ce241f6's test edit had not run on a
# GPU), perf/cluster_probe.py (written in session 13, never run), host_parts at 8 x 4096.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r89; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > $R/gpu.txt 2>&1
timeout 120 python3 perf/cluster_probe.py > $R/cluster_probe.txt 2>&1; echo "probe rc=$?" >> $R/cluster_probe.txt
cat $R/cluster_probe.txt
timeout 90 python3 perf/host_parts.py --out $R > $R/host_parts.txt 2>&1; echo "host_parts rc=$?"
tail -n 15 $R/host_parts.txt
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 260 bash perf/gpu_suite.sh tests tests tests/gpu -rfEs --maxfail=25 -p xdist > $R/suite.log 2>&1
grep -E "^(FAILED|ERROR)" $R/suite.log | head -20
grep -E "^SKIPPED" $R/suite.log | head -5
tail -n 3 $R/suite.log
cd $OUT && tar czf r89.tgz r89 && rm -rf r89
