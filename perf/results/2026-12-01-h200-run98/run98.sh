# Session 15, run 98: (1) bench.py bf16 norm forwards 4096 / 8192 with Liger-Kernel, torch and
# the stream rows (the RMSNorm forwards now on the grid of all rows); (2) the grid of all rows
# swept for the RMSNorm forwards not swept on it yet (bf16 / fp16 1024 and 12288, fp32 and
# bf16 -> FP8 at 4096 / 8192); its winners merged on this machine; A/B of HEAD (.exp/old)
# against the merged table, both backends, alternated twice; tests/gpu/test_measured_gpu.py.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r98; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
timeout 55 python3 perf/bench.py --out $R/liger --ops rmsnorm_fwd,layernorm_fwd --dtypes bf16 --sizes 4096,8192 --no-jit --no-host --time-budget 42 > $R/liger.txt 2>&1
sed -n '/^SUMMARY/,$p' $R/liger.txt | head -5 | cut -c1-200
(cd $OUT && tar czf r98a.tgz r98)
T="python3 perf/tune_norms.py --top 2 --shape-prefetch --target-ms 6 --grids persistent rows --ops rmsnorm_fwd"
timeout 70 $T --out $R/g16 --dtypes bf16 fp16 --sizes 1024 12288 --time-budget 52 > $R/g16.log 2>&1
timeout 70 $T --out $R/g32 --dtypes fp32 bf16-fp8 --sizes 4096 8192 --time-budget 52 > $R/g32.log 2>&1
grep -hE "best|rror" $R/g16.log $R/g32.log | cut -c1-200
for d in g16 g32; do
python3 - $R/$d/measured_norms.json <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
t["entries"] = [e for e in t["entries"] if e.get("grid") == "rows"]
print("rows-grid winners:", [(e["op"], e["input"], e["output"], e["hidden_size"], e["warps_m"], e["warps_n"], e["min_ctas_per_sm"], e["prefetch"], e["gbs"]) for e in t["entries"]])
json.dump(t, open(sys.argv[1].replace(".json", "_rows.json"), "w"), indent=1)
PY
[ -f $R/$d/measured_norms_rows.json ] && cp $R/$d/measured_norms_rows.json $R/measured_norms.json && python3 perf/merge_measured.py $R/measured_norms.json --run perf/results/2026-12-01-h200-run98 --min-gain 0.03
done
cp numba_norms/data/measured_norms.json $R/measured_norms_merged.json
(cd $OUT && rm -f r98a.tgz && tar czf r98a.tgz r98)
read OPS DTS SIZES < <(python3 - <<'PY'
import json
e = [x for x in json.load(open("numba_norms/data/measured_norms.json"))["entries"] if x.get("run", "").endswith("run98")]
ops = sorted({"rmsnorm_fwd_fp8" if x["output"].startswith("fp8") else "rmsnorm_fwd" for x in e})
print(",".join(ops) or "-", ",".join(sorted({x["input"] for x in e})) or "-", ",".join(sorted({str(x["hidden_size"]) for x in e}, key=int)) or "-")
PY
)
echo "A/B: $OPS $DTS $SIZES"
[ "$OPS" != "-" ] && OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=45 bash perf/ab_bench.sh $R/ab --ops $OPS --dtypes $DTS --sizes $SIZES --no-torch --no-stream --no-jit --no-host --no-liger --target-ms 5 --time-budget 36
cut -c1-120 $R/ab/summary.csv
(cd $OUT && rm -f r98a.tgz && tar czf r98a.tgz r98)
timeout 50 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_measured_gpu.py -k "rmsnorm_fwd and nvrtc" -x > $R/measured_tests.log 2>&1
tail -n 3 $R/measured_tests.log
cd $OUT && rm -f r98a.tgz && tar czf r98.tgz r98 && rm -rf r98
