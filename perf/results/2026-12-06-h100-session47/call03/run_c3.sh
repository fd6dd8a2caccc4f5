# Session 47, call 3: the Numba bands of _WIDE_VECTOR_GENERAL: their GPU tests, then a same-run
# A/B (bf16, Numba) against 8ecb3d4 (.exp/old) in and past the bands.
. perf/device_env.sh
R=$OUT/c3; mkdir -p $R
cp .exp/run_c3.sh $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -n 15 -p xdist tests/gpu/test_measured_gpu.py -k "wide or capped" -rfE > $R/tests.txt 2>&1
echo "tests rc=$?"; tail -4 $R/tests.txt
date -u
ab $R/ab 120 --ops norms --backends numba --dtypes bf16 --sizes 4104,5112,8200,12296,18944,20472
date -u
cd $R && tar czf ../c3.tgz . && cd .. && rm -rf c3
