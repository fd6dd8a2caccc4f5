# Session 15, run 99: (1) fp32 layernorm_fwd 4096 / 8192 swept on both grids (fp32 RMSNorm
# forwards gained 8-10% on the grid of all rows in run 98); rows-grid winners merged here and
# A/B'd against HEAD (both backends, alternated twice); (2) bench.py bf16 rmsnorm_fwd at every
# benchmark size and the other norm ops at 1000, with torch, Liger and the stream rows, for the
# plots.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r99; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
timeout 60 python3 perf/tune_norms.py --top 2 --shape-prefetch --target-ms 6 --grids persistent rows --ops layernorm_fwd --dtypes fp32 --sizes 4096 8192 --out $R/g32 --time-budget 45 > $R/g32.log 2>&1
grep -hE "best|rror" $R/g32.log | cut -c1-200
python3 - $R/g32/measured_norms.json <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
t["entries"] = [e for e in t["entries"] if e.get("grid") == "rows"]
print("rows-grid winners:", [(e["op"], e["input"], e["hidden_size"], e["warps_m"], e["warps_n"], e["min_ctas_per_sm"], e["prefetch"], e["gbs"]) for e in t["entries"]])
json.dump(t, open(sys.argv[1].replace(".json", "_rows.json"), "w"), indent=1)
PY
cp $R/g32/measured_norms_rows.json $R/measured_norms.json && python3 perf/merge_measured.py $R/measured_norms.json --run perf/results/2026-12-01-h200-run99 --min-gain 0.03
cp numba_norms/data/measured_norms.json $R/measured_norms_merged.json
SIZES=$(python3 -c "import json; print(','.join(sorted({str(e['hidden_size']) for e in json.load(open('$R/measured_norms.json'))['entries']}, key=int)))")
echo "A/B sizes: $SIZES"
[ -n "$SIZES" ] && OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=25 bash perf/ab_bench.sh $R/ab --ops layernorm_fwd --dtypes fp32 --sizes $SIZES --no-torch --no-stream --no-jit --no-host --no-liger --target-ms 5 --time-budget 18 && cut -c1-120 $R/ab/summary.csv
(cd $OUT && tar czf r99a.tgz r99)
timeout 90 python3 perf/bench.py --out $R/rms --ops rmsnorm_fwd --dtypes bf16 --sizes 768,1000,1024,2048,2560,3584,4096,5003,5120,7168,8192,12288,16384,32768,65536 --no-jit --no-host --time-budget 75 > $R/rms.txt 2>&1
sed -n '/^SUMMARY/,$p' $R/rms.txt | head -4 | cut -c1-200; grep SKIPPED $R/rms.txt | cut -c1-200
(cd $OUT && rm -f r99a.tgz && tar czf r99a.tgz r99)
timeout 45 python3 perf/bench.py --out $R/n1000 --ops layernorm_fwd,layernorm_bwd,rmsnorm_bwd --dtypes bf16 --sizes 1000 --no-jit --no-host --time-budget 33 > $R/n1000.txt 2>&1
sed -n '/^SUMMARY/,$p' $R/n1000.txt | head -5 | cut -c1-200
cd $OUT && rm -f r99a.tgz && tar czf r99.tgz r99 && rm -rf r99
