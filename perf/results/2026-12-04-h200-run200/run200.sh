# Session 31, run 200 (uncommitted tree on 976f3d0: streaming softmax entries on the grid of all
# rows, run 197's winners; Numba keeps twelve of the old shapes): the whole GPU test suite.
. perf/device_env.sh
R=$OUT/r200; mkdir -p $R
cp .exp/run200.sh $R/
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 480 bash perf/gpu_suite.sh tests tests/gpu -rfEs --maxfail=25 -p xdist 2>&1 | tail -8
