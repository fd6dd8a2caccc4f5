# Session 27, run 163: prototype of a long-row bf16 softmax forward that re-reads its slice
# through L2 instead of holding it (.exp/proto_reread.py), beside the library's kernel.
. perf/device_env.sh
R=$OUT/r163; mkdir -p $R
timeout 400 python3 .exp/proto_reread.py $R/proto.json 2>&1 | tee $R/proto.log | grep -v "^cols .* reread" ; sort -t'%' -k1 $R/proto.log | tail -0
python3 - $R/proto.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for cols in (8192, 16384, 32768, 131072):
    rs = [r for r in d["rows"] if r["cols"] == cols]
    rs.sort(key=lambda r: -r["gbs"])
    print(cols, [(r["kind"], r.get("grid"), round(r["pct"], 1), "%.1e" % r.get("err", 0)) for r in rs[:8]])
PY
cd $OUT && tar czf r163.tgz r163 && rm -rf r163
