# Session 57's planned first GPU call, not run: no device was lent (see README.md). Run from the
# repository root on the device machine with carry [".whl"]:
#   bash perf/results/2026-12-07-session57/planned_call1.sh
# (a) the lean backward's pipeline from kept words (f7bf80f, untimed): Numba on NVRTC's entries
#     (FORCE=nvrtc: 1 x 4 / 1 x 8 with the pipeline at layernorm_bwd 4104 / 8200) against its
#     own, NVRTC beside, two rounds; the new GPU test; the Numba general sweep, whose capped
#     stage now times the pipeline on the top shapes;
# (b) variant rk against this tree (abv: the diff applied to a copy); (c) fp32 norms, both
#     backends beside torch (none since session 51).
. perf/device_env.sh
S=perf/results/2026-12-07-session57
R=$OUT/c1; mkdir -p $R
cp $S/planned_call1.sh $R/run_s58c1.sh.txt
P=perf/results/2026-12-07-session56/call1/prof56.py
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
git log --oneline -1 > $R/tree.txt
for c in "layernorm_bwd 4104" "layernorm_bwd 8200" "rmsnorm_bwd 4104"; do
  for i in 1 2; do
    python3 $P $c 50 2>&1 | tail -1
    DISABLE_NVRTC=1 python3 $P $c 50 2>&1 | tail -1
    FORCE=nvrtc DISABLE_NVRTC=1 python3 $P $c 50 2>&1 | tail -1
  done
done | tee $R/force.txt
GPU_TEST_WORKERS=4 OUT=$R/suite timeout 120 bash perf/gpu_suite.sh tests \
  tests/gpu/test_numba_norms_gpu.py -k lean_backward_pipeline -q -rfE -p xdist 2>&1 | tail -3
timeout 200 python3 perf/tune_norms.py --out $R/sw --backend numba --general --top 3 \
  --ops layernorm_bwd rmsnorm_bwd --dtypes bf16 --sizes 4104 8200 --target-ms 4 \
  --time-budget 170 > $R/sw.log 2>&1
echo "sweep rc=$? at $SECONDS s"; grep -h "x[0-9]" $R/sw.log
(cd $OUT && tar czf c1.tgz c1)
abv $S/variant_rk_untimed.diff $R/rk 80 --ops layernorm_bwd --backends numba --dtypes bf16 \
  --sizes 4104,8200,10232
timeout 150 python3 perf/bench.py --out $R/fp32 --ops layernorm_bwd,rmsnorm_bwd,layernorm_fwd,rmsnorm_fwd \
  --dtypes fp32 --backends nvrtc,numba --sizes 4096,4104,8192,12296 --no-stream --no-jit \
  --no-host --no-liger --target-ms 4 --time-budget 120 > $R/fp32.log 2>&1
tail -40 $R/fp32/bench.txt 2>/dev/null
cd $OUT && rm -f c1.tgz && tar czf c1.tgz c1 && rm -rf c1
