# Session 30, run 185 (tree b70f332 + run 184's aligned causal chunk-4 entries): softmax rows at
# 131072 keys whose CTAs share a row, launched as clusters (the planner's sm_90 choice) and
# through the arrival counter instead (.exp/clus.py patches planner.cluster_size to 1), both
# backends, alternated twice.
. perf/device_env.sh
R=$OUT/r185; mkdir -p $R
for r in 1 2; do
  for be in nvrtc numba; do
    for mode in on off; do
      timeout 90 python3 .exp/clus.py $be $mode $R/clus_${be}_${mode}_$r.csv > $R/clus_${be}_${mode}_$r.txt 2>&1 || tail -5 $R/clus_${be}_${mode}_$r.txt
    done
  done
done
python3 - $R <<'PY'
import csv, glob, sys, statistics
rows = {}
for f in glob.glob(sys.argv[1] + "/clus_*.csv"):
    for r in csv.DictReader(open(f)):
        rows.setdefault((r["op"], r["dtype"], r["backend"], r["mode"]), []).append(r)
for k in sorted({k[:3] for k in rows}):
    on, off = rows.get(k + ("on",), []), rows.get(k + ("off",), [])
    if not on or not off:
        continue
    a = statistics.median(float(r["us"]) for r in on); b = statistics.median(float(r["us"]) for r in off)
    print(*k, on[0]["grid"], on[0]["cluster"], off[0]["grid"], f"on {a:.1f} off {b:.1f} on/off {a/b:.3f}", sep=",")
PY
cd $OUT && tar czf r185.tgz r185 && rm -rf r185
