# Session 14, run 93 (the device was lent again after run 92's "paused"): (1) bench.py with
# Liger-Kernel 0.8.5 (its wheel carried in .whl) beside torch eager and both backends, bf16 norms
# at 4096 / 8192; (2) Numba bf16 layernorm_fwd 12288 on its own 2x6 entry (HEAD) vs the shared
# 2x12 pipeline entry (the own entry dropped in this machine's copy), alternated twice;
# (3) perf/host_parts.py (fixed); (4) the whole GPU suite, what time is left.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r93; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
python3 -c "import liger_kernel, importlib.metadata as m; print('liger', m.version('liger-kernel'))" 2>&1 | tail -1
timeout 150 python3 perf/bench.py --out $R/liger --ops layernorm_fwd,layernorm_bwd,rmsnorm_fwd,rmsnorm_bwd --dtypes bf16 --sizes 4096,8192 --no-jit --no-host --time-budget 130 > $R/liger.txt 2>&1
echo "liger bench rc=$?"; sed -n '/^SUMMARY/,$p' $R/liger.txt | head -8; grep -E "liger|ERROR" $R/liger.txt | head -12 | cut -c1-150
rm -rf .exp/old && mkdir -p .exp/old && cp -r numba_norms rtc pyproject.toml .exp/old/ && mkdir -p .exp/old/perf && cp perf/bench.py perf/_bench_*.py .exp/old/perf/
python3 - <<'PY'
import json
p = "numba_norms/data/measured_norms_numba.json"
t = json.load(open(p))
keep = [e for e in t["entries"] if not (e["op"] == "layernorm_fwd" and e["hidden_size"] == 12288
        and e["weight"] == "bf16" and e["output"] == "bf16")]
print("dropped", len(t["entries"]) - len(keep), "entry")
t["entries"] = keep
json.dump(t, open(p, "w"), indent=1)
PY
OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=40 bash perf/ab_bench.sh $R/ab --backends numba --ops layernorm_fwd --dtypes bf16 --sizes 12288,16384 --no-torch --no-stream --no-jit --no-host --time-budget 25 --target-ms 5
cut -c1-150 $R/ab/summary.csv
timeout 60 python3 perf/host_parts.py --out $R > $R/host_parts.txt 2>&1; echo "host_parts rc=$?"; cat $R/host_parts.txt
(cd $OUT && tar czf r93.tgz r93 && rm -rf r93)
S=$OUT/r93s; mkdir -p $S
GPU_TEST_WORKERS=12 OUT=$S/suite timeout 170 bash perf/gpu_suite.sh tests tests tests/gpu -rfEs --maxfail=25 -p xdist > $S/suite.log 2>&1
grep -E "^(FAILED|ERROR)" $S/suite.log | head -20
tail -n 2 $S/suite.log
cd $OUT && tar czf r93s.tgz r93s && rm -rf r93s
