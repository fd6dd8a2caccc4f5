# Session 47, call 1: the whole GPU suite on 8ecb3d4, then a Numba general sweep at 16-bit rows of
# 4104-18944 columns (Numba runs TE's uncapped entry there; NVRTC has bands).
. perf/device_env.sh
R=$OUT/c1; mkdir -p $R
cp .exp/run_c1.sh $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
GPU_TEST_WORKERS=15 OUT=$R/suite timeout 300 bash perf/gpu_suite.sh tests tests/gpu -rfE \
  --maxfail=40 -p xdist > $R/suite.txt 2>&1
echo "suite rc=$?"; tail -25 $R/suite.txt
date -u
timeout 150 python3 perf/tune_norms.py --out $R/gen --backend numba --general \
  --ops layernorm_fwd rmsnorm_fwd layernorm_bwd rmsnorm_bwd --dtypes bf16 \
  --sizes 4104 8200 18944 --top 1 --target-ms 3 --time-budget 115 > $R/gen.txt 2>&1
echo "gen rc=$?"; grep -v "^\s*$" $R/gen.txt | tail -30
gzip $R/gen/tune.csv; rm -f $R/gen*/measured_norms*.json
date -u
cd $R && tar czf ../c1.tgz . && cd .. && rm -rf c1
