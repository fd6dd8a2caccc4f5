# Session 50, call 3: the working tree (fc60b25 + gamma / beta under one bounds check in the
# lean forward's y loop + the lean form for tuned LayerNorm forwards): the lean GPU test, a
# same-run A/B (two rounds) against fc60b25 (.exp/base) for the Numba LayerNorm forwards whose
# kernels changed (46336 general lean; 65536 tuned lean; 32768 unchanged), then the
# whole GPU suite in the time left. ~570 s.
. perf/device_env.sh
R=$OUT/c3; mkdir -p $R
cp .exp/run_s50c3.sh $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
timeout 80 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_measured_gpu.py -k lean -rfE > $R/lean_test.txt 2>&1
echo "lean test rc=$?"; tail -3 $R/lean_test.txt
date -u
OLD=.exp/base ROUNDS=2 ab $R/ab 60 --ops layernorm_fwd --backends numba --dtypes bf16,fp16 --sizes 32768,46336,65536
date -u
left=$((575 - SECONDS))
[ $left -gt 120 ] && GPU_TEST_WORKERS=15 OUT=$R/suite timeout $left bash perf/gpu_suite.sh tests tests/gpu -rfE --maxfail=40 -p xdist > $R/suite.txt 2>&1
echo "suite rc=$?"; tail -2 $R/suite.txt; grep FAILED $R/suite.txt | head -20
date -u
cd $R && tar czf ../c3.tgz . && cd .. && rm -rf c3
