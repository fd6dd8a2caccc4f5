# Session 48, call 1. Working tree = 05eca70 + (a) NVRTC: the LayerNorm forward's Chan ratios
# worked out once in shared memory (ChanFolder); (b) Numba: the general forwards' software
# pipeline (guarded word loads), on in the LayerNorm forward bands to 10240 / 20480; (c) Numba:
# the general LayerNorm forward's Chan merge reads the merged counts from shared memory (no
# warp counts held in registers; ptxas spills 18944: 68 -> 0 B, 46336: 572 -> 328 B).
# Same-run A/B against 05eca70 (.exp/old), two rounds; the GPU tests of both; a Numba general
# sweep of the forwards with the pipeline; an NVRTC general sweep with FP8 outputs.
. perf/device_env.sh
R=$OUT/c1; mkdir -p $R
cp .exp/run_c1.sh $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
ab $R/ab 80 --ops layernorm_fwd,layernorm_fwd_fp8 --backends nvrtc,numba --dtypes bf16 --sizes 8200,18944,20472,46336
date -u
timeout 80 python3 -m pytest -q -m gpu -p no:cacheprovider -n 15 -p xdist tests/gpu/test_fp8_gpu.py tests/gpu/test_norms_api_gpu.py tests/gpu/test_measured_gpu.py -k "layernorm or fp8 or general or pipeline" -rfE > $R/tests.txt 2>&1
echo "tests rc=$?"; tail -3 $R/tests.txt
date -u
timeout 105 python3 perf/tune_norms.py --out $R/gen --backend numba --general --ops layernorm_fwd rmsnorm_fwd --dtypes bf16 --sizes 8200 18944 --top 2 --target-ms 3 --time-budget 85 > $R/gen.txt 2>&1
echo "sweep rc=$?"; grep -v "^\s*$" $R/gen.txt | tail -8
date -u
timeout 95 python3 perf/tune_norms.py --out $R/gen8 --backend nvrtc --general --ops layernorm_fwd rmsnorm_fwd --dtypes bf16-fp8 --sizes 8200 4104 --top 2 --target-ms 3 --time-budget 75 > $R/gen8.txt 2>&1
echo "sweep8 rc=$?"; grep -v "^\s*$" $R/gen8.txt | tail -8
for d in gen gen8; do gzip $R/$d/tune.csv; rm -f $R/$d/measured_norms*.json; done
date -u
cd $R && tar czf ../c1.tgz . && cd .. && rm -rf c1
