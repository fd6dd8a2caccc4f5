# Session 27, run 162 (tree 02d368d): the whole GPU suite, first on the GPU since the narrowing
# mend (275fd0d) and the generated-entry test change.
. perf/device_env.sh
R=$OUT/r162; mkdir -p $R
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 320 bash perf/gpu_suite.sh tests tests/gpu -rfEs --maxfail=25 -p xdist 2>&1 | tail -12
cd $OUT && tar czf r162.tgz r162 && rm -rf r162
