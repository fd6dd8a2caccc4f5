# Session 50, call 1: fc60b25 on the GPU: the lean-form test, the Numba norm GPU tests, then a
# same-run A/B (one round) against a9354fb (.exp/old) for the Numba 16-bit forwards whose form
# or cap changed (5003 odd rows, 18944 rmsnorm band, 46336 several-CTA entry). ~480 s.
. perf/device_env.sh
R=$OUT/c1; mkdir -p $R
cp .exp/run_s50c1.sh $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
timeout 80 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_measured_gpu.py -k lean -rfE > $R/lean_test.txt 2>&1
echo "lean test rc=$?"; tail -3 $R/lean_test.txt
date -u
timeout 170 python3 -m pytest -q -m gpu -p no:cacheprovider -n 15 -p xdist tests/gpu/test_measured_gpu.py tests/gpu/test_numba_norms_gpu.py -k "numba or lean" -rfE > $R/tests.txt 2>&1
echo "tests rc=$?"; tail -3 $R/tests.txt; grep FAILED $R/tests.txt | head -20
date -u
left=$((560 - SECONDS))
[ $left -gt 120 ] && ROUNDS=1 ab $R/ab $((left / 2 - 5)) --ops layernorm_fwd,rmsnorm_fwd --backends numba --dtypes bf16,fp16 --sizes 5003,18944,46336
date -u
cd $R && tar czf ../c1.tgz . && cd .. && rm -rf c1
