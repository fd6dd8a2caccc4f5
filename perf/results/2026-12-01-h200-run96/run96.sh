# Session 15, run 96: (1) the forwards swept on both grids (tune_norms.py --grids persistent
# rows, bf16 / fp16, 2048-8192); winners on the grid of all rows merged into this machine's copy
# of the table; (2) Numba's backwards on the general shapes of 16-byte-aligned 1000-column rows;
# (3) A/B, both backends, alternated twice: b1d522a (.exp/old) against this tree (the merged
# rows-grid entries and registry._VECTOR_GENERAL) at the merged sizes and 1000; (4) bench.py
# at 1000 with torch; (5) host_parts.py with the CUfunction rows.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r96; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
T="python3 perf/tune_norms.py --top 2 --shape-prefetch --target-ms 6"
timeout 150 $T --out $R/grid --grids persistent rows --ops rmsnorm_fwd layernorm_fwd --dtypes bf16 fp16 --sizes 2048 3584 4096 5120 7168 8192 --time-budget 130 > $R/grid.log 2>&1
grep -hE "best|rror" $R/grid.log | cut -c1-200
python3 - $R/grid/measured_norms.json <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
t["entries"] = [e for e in t["entries"] if e.get("grid") == "rows"]
print("rows-grid winners:", [(e["op"], e["input"], e["hidden_size"], e["warps_m"], e["warps_n"], e["min_ctas_per_sm"], e["prefetch"], e["gbs"]) for e in t["entries"]])
json.dump(t, open(sys.argv[1].replace(".json", "_rows.json"), "w"), indent=1)
PY
cp $R/grid/measured_norms_rows.json $R/measured_norms.json
python3 perf/merge_measured.py $R/measured_norms.json --run perf/results/2026-12-01-h200-run96 --min-gain 0.03
SIZES=$(python3 -c "import json; print(','.join(sorted({str(e['hidden_size']) for e in json.load(open('$R/measured_norms.json'))['entries']} | {'1000'}, key=int)))")
echo "A/B sizes: $SIZES"
(cd $OUT && tar czf r96a.tgz r96)
timeout 110 $T --out $R/genn --backend numba --general --ops rmsnorm_bwd layernorm_bwd --dtypes bf16 --sizes 1000 --time-budget 90 > $R/genn.log 2>&1
grep -hE "best|rror" $R/genn.log | cut -c1-200
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=50 bash perf/ab_bench.sh $R/ab --ops layernorm_fwd,rmsnorm_fwd,layernorm_bwd,rmsnorm_bwd --dtypes bf16,fp16 --sizes $SIZES --no-torch --no-stream --no-jit --no-host --time-budget 35 --target-ms 5
cut -c1-150 $R/ab/summary.csv
timeout 60 python3 perf/bench.py --out $R/b1000 --ops layernorm_fwd,rmsnorm_fwd,layernorm_bwd,rmsnorm_bwd --dtypes bf16 --sizes 1000 --no-jit --no-host --time-budget 40 > $R/b1000.txt 2>&1
sed -n '/^SUMMARY/,$p' $R/b1000.txt | head -20
timeout 60 python3 perf/host_parts.py --out $R > $R/host_parts.txt 2>&1; echo "host_parts rc=$?"; cat $R/host_parts.txt
cp numba_norms/data/measured_norms.json $R/measured_norms_merged.json
cd $OUT && rm -f r96a.tgz && tar czf r96.tgz r96 && rm -rf r96
