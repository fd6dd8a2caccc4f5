# Session 44, call 4: Numba's generated shapes scaled from the entries the Numba path runs (its
# own table first; before, from the shared table): same-run A/B against HEAD 5b74f27 (.exp/old),
# Numba, two rounds, on a sample of the 259 moved selections (bf16; rows 16384).
. perf/device_env.sh
R=$OUT; mkdir -p $R; cp .exp/run_c4.sh $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
ab $R/fwd 110 --ops layernorm_fwd,rmsnorm_fwd --dtypes bf16 --sizes 12544,12800,13312,13824 --backends numba
ab $R/fp8 110 --ops layernorm_fwd_fp8 --dtypes bf16 --sizes 49920,73728,92736,131072 --backends numba
ab $R/lnb 110 --ops layernorm_bwd --dtypes bf16 --sizes 15872,76608,112000,131072 --backends numba
ab $R/rmb 110 --ops rmsnorm_bwd --dtypes bf16 --sizes 57024,86016,103680 --backends numba
for d in fwd fp8 lnb rmb; do rm -rf $R/$d/old? $R/$d/new?; done
grep -il "mismatch\|error" $R/*/*.txt | head -5
date -u
