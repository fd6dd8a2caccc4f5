# Session 24, run 149: the Numba kernels on the NVRTC winners of runs 142-145 at the 15 sizes where
# the Numba path still runs a "kept" entry (16-bit forwards, fp32 -> e4m3 RMSNorm, layernorm_bwd
# bf16 8192). tune_norms.py --backend numba --refine: the 3 fastest NVRTC shapes each, against the
# Numba path's serving entry.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r149; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
P=perf/results/2026-12-03-h200-run
REF="${P}142/tune.csv ${P}143/rms16/tune.csv ${P}143/rms32/tune.csv ${P}143/ln/tune.csv ${P}145/bwd/tune.csv"
T="python3 perf/tune_norms.py --backend numba --refine $REF --top 3 --target-ms 4"
$T --out $R/ln16 --ops layernorm_fwd --dtypes bf16 --sizes 3584 5120 7168 --time-budget 60 2>&1 | grep -v "^ *$" | tail -8 | tee $R/ln16.txt
$T --out $R/lnh --ops layernorm_fwd --dtypes fp16 fp16-fp8 --sizes 1024 3584 --time-budget 70 2>&1 | grep -v "^ *$" | tail -8 | tee $R/lnh.txt
$T --out $R/rmsb --ops rmsnorm_fwd --dtypes bf16 --sizes 1024 2560 --time-budget 45 2>&1 | grep -v "^ *$" | tail -6 | tee $R/rmsb.txt
$T --out $R/rmsb8 --ops rmsnorm_fwd --dtypes bf16-fp8 --sizes 3584 7168 --time-budget 45 2>&1 | grep -v "^ *$" | tail -6 | tee $R/rmsb8.txt
$T --out $R/rmsh --ops rmsnorm_fwd --dtypes fp16 --sizes 2560 --time-budget 30 2>&1 | grep -v "^ *$" | tail -6 | tee $R/rmsh.txt
$T --out $R/rms32 --ops rmsnorm_fwd --dtypes fp32-fp8 --sizes 1024 7168 65536 --time-budget 60 2>&1 | grep -v "^ *$" | tail -8 | tee $R/rms32.txt
$T --out $R/bwd --ops layernorm_bwd --dtypes bf16 --sizes 8192 --wgrad-smem also --time-budget 40 2>&1 | grep -v "^ *$" | tail -6 | tee $R/bwd.txt
cd $OUT && tar czf r149.tgz r149 && rm -rf r149
