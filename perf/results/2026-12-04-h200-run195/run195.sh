# Session 31, run 195: the streaming softmax kernels on rows of 8 CTAs (clusters of 8) at 131072
# keys, which the sweeps so far left out (STREAM_CTAS 1, 2, 4); runs 190-194's shared-memory
# prototype ran fp32 131072 best on clusters of 8 CTAs, 3 an SM (84-85% against 73-75%).
. perf/device_env.sh
R=$OUT/r195; mkdir -p $R
cp .exp/run195.sh $R/
timeout 540 python3 perf/tune_softmax.py --out $R/stream8 --stream --stream-ctas 8 \
  --ops softmax_fwd masked_softmax_fwd softmax_bwd --dtypes bf16 fp32 \
  --keys 131072 --target-ms 4 --time-budget 420 2>&1 | grep -v "^  " | tail -12
python3 - $R/stream8/tune.csv <<'PY'
import csv, sys, collections
rows = list(csv.DictReader(open(sys.argv[1])))
by = collections.defaultdict(list)
for r in rows:
    by[(r["op"], r["dtype"])].append(r)
for k, rs in by.items():
    rs.sort(key=lambda r: -float(r.get("gbs") or 0))
    base = [r for r in rs if r["label"] == "baseline"]
    print(k, "baseline", [(r["max_cols"], r["warps_n"], r["min_ctas_per_sm"], r["chunk"], r["gbs"], r["pct_ceiling"]) for r in base][:1])
    for r in rs[:4]:
        print("  ", {c: r[c] for c in ("label", "max_cols", "ctas_per_row", "warps_n", "min_ctas_per_sm", "chunk", "reverse", "regs", "grid", "median_us", "pct_ceiling", "vs_baseline", "check")})
PY
