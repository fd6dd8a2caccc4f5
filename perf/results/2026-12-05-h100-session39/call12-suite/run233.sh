# Session 39, run 233: the whole GPU suite on the stream-id scratch pool (and the session's
# other changes), then the pool key's host cost on a CuPy backward (stream id on / off).
. perf/device_env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu.txt
date -u
GPU_TEST_WORKERS=15 OUT=$OUT/suite timeout 420 bash perf/gpu_suite.sh tests tests/gpu -rfEs --maxfail=40 -p xdist -q > $OUT/console.txt 2>&1
echo "suite rc=$?"
date -u
for b in nvrtc numba; do
  if [ $b = numba ]; then export DISABLE_NVRTC=1; else unset DISABLE_NVRTC; fi
  echo "--- $b"; timeout 60 python3 .exp/fence_ab.py 2>&1 | tail -2
done | tee $OUT/stream_id_ab.txt
date -u
