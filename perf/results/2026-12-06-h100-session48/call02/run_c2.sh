# Session 48, call 2: the working tree of call 1 with the registry changes its sweeps gave
# (NVRTC FP8-output LayerNorm forward shapes at the 5120 / 10240 bands; the Numba RMSNorm
# forward's 10240 band 1 x 8 at 1 CTA an SM with the pipeline) and the GPU test fixed (the
# check's backward kept its own entry): the norm GPU test files, then an A/B of the changed
# entries against 05eca70 (.exp/old), one round (the device budget left).
. perf/device_env.sh
R=$OUT/c2; mkdir -p $R
cp .exp/run_c2.sh $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
timeout 140 python3 -m pytest -q -m gpu -p no:cacheprovider -n 15 -p xdist tests/gpu/test_measured_gpu.py tests/gpu/test_fp8_gpu.py tests/gpu/test_norms_api_gpu.py tests/gpu/test_numba_norms_gpu.py tests/gpu/test_nvrtc_norms_gpu.py -rfE > $R/tests.txt 2>&1
echo "tests rc=$?"; tail -3 $R/tests.txt; grep FAILED $R/tests.txt | head -20
date -u
[ $SECONDS -lt 120 ] && ROUNDS=1 ab $R/ab 30 --ops layernorm_fwd_fp8,rmsnorm_fwd,rmsnorm_fwd_fp8 --backends nvrtc,numba --dtypes bf16 --sizes 4104,8200
date -u
cd $R && tar czf ../c2.tgz . && cd .. && rm -rf c2
