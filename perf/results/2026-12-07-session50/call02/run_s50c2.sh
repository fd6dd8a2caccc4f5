# Session 50, call 2: the Numba forward's lean form on tuned entries (.exp/tl = fc60b25 with the
# general-only restriction of _forward_lean dropped) against the tree as landed (wide form on
# tuned entries): same-run A/B, two rounds ("old" = tuned lean, "new" = as landed); then a
# refine sweep of hand-picked LayerNorm bf16 shapes at 32768 / 65536 with caps in the .exp/tl
# tree (the lean form where a cap squeezes the wide one). ~560 s.
. perf/device_env.sh
R=$OUT/c2; mkdir -p $R
cp .exp/run_s50c2.sh .exp/hand_refine.csv $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
OLD=.exp/tl ROUNDS=2 ab $R/ab_rms 60 --ops rmsnorm_fwd --backends numba --dtypes bf16,fp16 --sizes 8192,12288,32768,65536
date -u
OLD=.exp/tl ROUNDS=2 ab $R/ab_ln 45 --ops layernorm_fwd --backends numba --dtypes bf16 --sizes 32768,65536
date -u
left=$((570 - SECONDS))
[ $left -gt 90 ] && (cd .exp/tl && PYTHONPATH=/tmp/site:$PWD timeout $left python3 perf/tune_norms.py --out $R/tune --backend numba --ops layernorm_fwd --dtypes bf16 --sizes 32768 65536 --refine ../hand_refine.csv --top 4 --target-ms 4 --time-budget $((left - 40)) > $R/tune.txt 2>&1; echo "tune rc=$?"; tail -5 $R/tune.txt)
date -u
cd $R && tar czf ../c2.tgz . && cd .. && rm -rf c2
