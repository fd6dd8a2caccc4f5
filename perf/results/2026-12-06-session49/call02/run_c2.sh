# Session 49, call 2: the Numba forward's lean form (x kept as loaded, widened per vector) and an
# opaque column base per row, against the current form, on TE's general entry at caps 4/6/8
# (several CTAs a row), env-selected variants in one process each (own kernel caches).
. perf/device_env.sh
R=$OUT/c2; mkdir -p $R; export R
cp .exp/run_c2.sh .exp/lean_exp.py $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
V=("base:off:0:0" "lean:on:1:1" "opq:off:1:0" "auto:auto:1:1")
for v in "${V[@]}"; do IFS=: read l a b c <<< "$v"
  NUMBA_NORMS_CACHE_DIR=/tmp/nnc_$l NN_LEAN=$a NN_OPQ=$b NN_OPQ2=$c timeout 200 python3 .exp/lean_exp.py $l --compile-only > $R/compile_$l.txt 2>&1 &
done; wait
date -u
for round in 1 2; do for v in "${V[@]}"; do IFS=: read l a b c <<< "$v"
  NUMBA_NORMS_CACHE_DIR=/tmp/nnc_$l NN_LEAN=$a NN_OPQ=$b NN_OPQ2=$c timeout 100 python3 .exp/lean_exp.py $l 2>&1 | grep -v Warn | tail -20
done; done
date -u
cd $R && tar czf ../c2.tgz . && cd .. && rm -rf c2
