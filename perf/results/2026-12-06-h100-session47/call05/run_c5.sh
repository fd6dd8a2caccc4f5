# Session 47, call 5: (a) dispatch passes the registry the bytes of x a vector may span (fp8
# rows of 8 mod 16 bytes take 16-byte vectors of x); (b) the Numba general LayerNorm forward's
# Chan ratios across warps worked out once, out of the row loop. A/B against 0c4ed54
# (.exp/old), one round, then the FP8 GPU tests and the Numba general-size tests.
. perf/device_env.sh
R=$OUT/c5; mkdir -p $R
cp .exp/run_c5.sh $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
ROUNDS=1 ab $R/ab 60 --ops layernorm_fwd,layernorm_fwd_fp8 --backends numba,nvrtc --dtypes bf16 --sizes 4104,8200,18944,20472
date -u
timeout 70 python3 -m pytest -q -m gpu -p no:cacheprovider -n 15 -p xdist tests/gpu/test_fp8_gpu.py tests/gpu/test_norms_api_gpu.py tests/gpu/test_measured_gpu.py -k "fp8 or general_sizes or (wide and numba)" -rfE > $R/tests.txt 2>&1
echo "tests rc=$?"; tail -4 $R/tests.txt
date -u
cd $R && tar czf ../c5.tgz . && cd .. && rm -rf c5
