# Session 31, run 197: the streaming softmax kernels on the grid of all rows (a CTA a row, the
# hardware scheduler placing them) against the persistent grid, at 8192-32768 keys. Run 196's
# prototype: a persistent row copy capped at 91.6% of the ceiling where the same copy on a grid
# of all rows ran 96.5%, and its shared-memory softmax 93.4% on the grid of rows.
. perf/device_env.sh
R=$OUT/r197; mkdir -p $R
cp .exp/run197.sh $R/
timeout 560 python3 perf/tune_softmax.py --out $R/rows --stream --grids persistent rows \
  --ops softmax_fwd masked_softmax_fwd upper_triang_softmax_fwd softmax_bwd --dtypes bf16 fp16 fp32 \
  --keys 8192 16384 32768 --target-ms 4 --time-budget 500 2>&1 | grep -v "^  " | tail -40
python3 - $R/rows/tune.csv <<'PY'
import csv, sys, collections
rows = list(csv.DictReader(open(sys.argv[1])))
by = collections.defaultdict(list)
for r in rows:
    by[(r["op"], r["dtype"], r["cols"])].append(r)
for k, rs in by.items():
    rs.sort(key=lambda r: float(r["median_us"]))
    base = [r for r in rs if r["label"] == "baseline"][0]
    best = {g: next((r for r in rs if r["label"] != "baseline" and (r["row_grid"] or "persistent") == g), None) for g in ("persistent", "rows")}
    def f(r):
        return None if r is None else (r["warps_n"], r["min_ctas_per_sm"], r["chunk"], r["reverse"], r["regs"], r["occupancy"], r["grid"], r["median_us"], r["pct_ceiling"], r["vs_baseline"])
    print(k, "base", f(base), "\n   persistent", f(best["persistent"]), "\n   rows", f(best["rows"]))
PY
