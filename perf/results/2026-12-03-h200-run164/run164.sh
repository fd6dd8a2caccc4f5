# Session 27, run 164: the run-163 prototype with 10-launch loops between events and L2 eviction hints (ST 7): of a long-row bf16 softmax forward that re-reads its slice
# through L2 instead of holding it (.exp/proto_reread.py), beside the library's kernel.
. perf/device_env.sh
R=$OUT/r164; mkdir -p $R
timeout 400 python3 .exp/proto_reread.py $R/proto.json 2>&1 | tee $R/proto.log | grep -v "^cols .* reread" ; sort -t'%' -k1 $R/proto.log | tail -0
python3 - $R/proto.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for cols in (8192, 16384, 32768, 131072):
    rs = [r for r in d["rows"] if r["cols"] == cols]
    rs.sort(key=lambda r: -r["gbs"])
    print(cols, [(r["kind"], r.get("grid"), round(r["pct"], 1), "%.1e" % r.get("err", 0)) for r in rs[:8]])
PY
cd $OUT && tar czf r164.tgz r164 && rm -rf r164
