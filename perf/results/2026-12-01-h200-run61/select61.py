import csv, json
K=lambda e:(e["op"],e["weight"],e["hidden_size"])
cur=json.load(open("numba_norms/data/measured_norms.json"))
cand=json.load(open(".exp/cand61.json"))
own=json.load(open("numba_norms/data/measured_norms_numba.json"))
curd={K(e):e for e in cur["entries"] if e["input"]==e["weight"]==e["output"]}
candd={K(e):e for e in cand["entries"]}
ownk={K(e) for e in own["entries"] if e["input"]==e["weight"]==e["output"]}
t={}
for tag in "ab":
    for r in csv.DictReader(open(f"/tmp/r61/{tag}/bench.csv")):
        if r["impl"] in("nvrtc","numba"):
            t.setdefault((r["op"],r["dtype"],int(r["cols"]),r["impl"]),{})[tag]=float(r["median_us"])
new_run=json.load(open("perf/results/2026-12-01-h200-run60/measured_norms.json"))
changed=[K(e) for e in new_run["entries"]]
keep=[];numba_add=[];log=[]
for k in changed:
    op,dt,h=k
    gn=t[(op,dt,h,"nvrtc")]["a"]/t[(op,dt,h,"nvrtc")]["b"]
    gb=t[(op,dt,h,"numba")]["a"]/t[(op,dt,h,"numba")]["b"]
    if gn>=1.02:
        keep.append(k)
        if k not in ownk and gb<0.97:
            if k in curd:
                e=dict(curd[k]); e["run"]="perf/results/2026-12-01-h200-run61"; e["baseline"]="the shared entry before run 60 (kept for Numba: run 61 A/B)"
                numba_add.append(e); log.append((k,"keep shared, numba keeps old",round(gn,3),round(gb,3)))
            else: log.append((k,"keep shared, NUMBA LOSS no old entry",round(gn,3),round(gb,3)))
        else: log.append((k,"keep",round(gn,3),round(gb,3)))
    else:
        if k not in ownk and gb>=1.05:
            e=dict(candd[k]); e["run"]="perf/results/2026-12-01-h200-run61"; e["baseline"]="run 60 winner, faster on Numba only (run 61 A/B)"
            numba_add.append(e); log.append((k,"numba-own new",round(gn,3),round(gb,3)))
        else: log.append((k,"drop",round(gn,3),round(gb,3)))
for l in log: print(l)
entries=[candd[K(e)] if K(e) in keep and e["input"]==e["weight"]==e["output"] else e for e in cur["entries"]]
have={K(e) for e in cur["entries"] if e["input"]==e["weight"]==e["output"]}
entries+= [candd[k] for k in keep if k not in have]
cur["entries"]=entries
cur["source"]["later"].append({"run": "perf/results/2026-12-01-h200-run60 (sweep after the finalize change; kept only where run 61's same-run A/B gave NVRTC >= 1.02x)", "command": "python3 perf/tune_norms.py --out $OUT/sweep --ops layernorm_bwd rmsnorm_bwd --dtypes bf16 fp16 fp32 --sizes 768 1024 2048 2560 3584 4096 5120 7168 8192 --time-budget 250", "copy_ceiling_gbs": 4185})
json.dump(cur,open("numba_norms/data/measured_norms.json","w"),indent=1)
own["entries"]+=numba_add
json.dump(own,open("numba_norms/data/measured_norms_numba.json","w"),indent=1)
print(len(keep),"kept;",len(numba_add),"numba-own added")
