# Session 32, run 203: the whole GPU suite (session 31's last planner / test changes were not run
# on the GPU), then the waves probe: the persistent grid times W (1, 2, 4, 8) on the bf16 norms
# NVRTC, alternated twice.
. perf/device_env.sh
R=$OUT/r203; mkdir -p $R
cp .exp/run203.sh .exp/waves.py $R/
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 300 bash perf/gpu_suite.sh tests tests/gpu -rfEs --maxfail=25 -p xdist 2>&1 | tail -8
A="--no-torch --no-stream --no-jit --no-host --no-liger --target-ms 4 --backends nvrtc"
for k in 1 2; do
  for w in 1 2 4 8; do
    WAVES=$w timeout 45 python3 .exp/waves.py --out $R/n_w${w}_$k $A --ops layernorm_fwd,rmsnorm_fwd,layernorm_bwd,rmsnorm_bwd --dtypes bf16 --sizes 2048,4096,8192,16384,32768,65536 --time-budget 35 > $R/n_w${w}_$k.txt 2>&1
  done
done
python3 - <<'PY'
import csv, glob, os, collections
R = os.environ["OUT"] + "/r203"
d = collections.defaultdict(dict)
for f in glob.glob(R + "/*_w*_*/bench.csv"):
    tag = os.path.basename(os.path.dirname(f)).split("_")[1]
    for r in csv.DictReader(open(f)):
        if r.get("impl") != "nvrtc" or not r.get("median_us"):
            continue
        k = (r["op"], r["dtype"], r["cols"])
        d[k].setdefault(tag, []).append(float(r["median_us"]))
        d[k].setdefault("p" + tag, []).append(r.get("plan", "")[-40:]) if False else None
for k in sorted(d):
    import statistics as st
    base = st.mean(d[k].get("w1", [float("nan")]))
    print(*k, *(f"{t}:{st.mean(v):.1f}({base / st.mean(v):.3f})" for t, v in sorted(d[k].items())))
PY
