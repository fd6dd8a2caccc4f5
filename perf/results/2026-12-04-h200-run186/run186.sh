# Session 30, run 186 (uncommitted tree on b70f332: the torch fast path repeats softmax rows of
# several CTAs launched as one cluster, with fresh statistics scratch; the aligned causal 16-bit
# 131072-key entries on chunks of 4): host cost of such calls against b70f332 (.exp/old) on
# both backends, alternated twice; then the whole GPU test suite.
. perf/device_env.sh
R=$OUT/r186; mkdir -p $R
for r in 1 2; do
  for be in nvrtc numba; do
    (cd .exp/old && PYTHONPATH=/tmp/site:$PWD timeout 60 python3 ../host186.py $be old $R/host_${be}_old_$r.csv > $R/host_${be}_old_$r.txt 2>&1) || tail -3 $R/host_${be}_old_$r.txt
    timeout 60 python3 .exp/host186.py $be new $R/host_${be}_new_$r.csv > $R/host_${be}_new_$r.txt 2>&1 || tail -3 $R/host_${be}_new_$r.txt
  done
done
python3 - $R <<'PY'
import csv, glob, sys, statistics
rows = {}
for f in glob.glob(sys.argv[1] + "/host_*.csv"):
    for r in csv.DictReader(open(f)):
        rows.setdefault((r["case"], r["backend"], r["tree"]), []).append(r)
for case, be in sorted({k[:2] for k in rows}):
    o = [float(r["us"]) for r in rows.get((case, be, "old"), [])]
    n = [float(r["us"]) for r in rows.get((case, be, "new"), [])]
    plans = rows.get((case, be, "new"), [{}])[0].get("plans", "")
    if o and n:
        print(f"{case:40s} {be:6s} old {statistics.median(o):7.1f} us  new {statistics.median(n):7.1f} us  {plans}")
PY
(cd $OUT && tar czf r186a.tgz r186)
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 400 bash perf/gpu_suite.sh tests tests/gpu -rfEs --maxfail=25 -p xdist 2>&1 | tail -8
cd $OUT && rm -f r186a.tgz && tar czf r186.tgz r186 && rm -rf r186
