# Session 59's first GPU call. Run from the repository root on the device machine with carry
# [".whl"]:  bash perf/results/2026-12-08-session59/call1.sh
# (1) the row-alignment peel probe (perf/peel: the CUDA C kernels and, new, their Numba twin)
#     at odd 16-bit rows against the library on both backends and a copy; (2) session 57's
#     planned call (the lean pipeline, its GPU test, the Numba sweep, variant rk, fp32), which
#     writes $OUT/c1.tgz and is likely cut at the call's 600 s.
. perf/device_env.sh
mkdir -p $OUT/p1
cp perf/results/2026-12-08-session59/call1.sh $OUT/p1/call1.sh.txt
git log --oneline -1 > $OUT/p1/tree.txt
timeout 300 python3 perf/peel/peel_probe.py 2>&1 | tee $OUT/p1/peel.txt | tail -80
bash perf/results/2026-12-07-session57/planned_call1.sh
