# Session 15, run 95 (exploration, nothing merged on the device):
# (1) the bf16 forwards at 2048-16384 swept twice, on the persistent grid (as shipped) and on a
#     grid of all rows (planner patched on this machine: NN_EXP_GRID=rows), so shapes of fewer
#     elements a thread (Liger's 16) get their own caps and pipeline on each grid;
# (2) general shapes with 16-byte vectors at 1000 columns (tune_norms.py --general now sweeps
#     vector widths where the row allows), NVRTC all four ops, Numba the forwards;
# (3) layernorm_bwd bf16 32768 / 65536 with 16 CTAs a row in the sweep (the counter path).
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r95; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
T="python3 perf/tune_norms.py --top 2 --shape-prefetch --target-ms 6"
timeout 100 $T --out $R/gen --general --ops rmsnorm_fwd layernorm_fwd rmsnorm_bwd layernorm_bwd --dtypes bf16 --sizes 1000 --time-budget 80 > $R/gen.log 2>&1
grep -hE "best|rror" $R/gen.log | cut -c1-200
timeout 110 $T --out $R/genn --backend numba --general --ops rmsnorm_fwd layernorm_fwd --dtypes bf16 --sizes 1000 --time-budget 90 > $R/genn.log 2>&1
grep -hE "best|rror" $R/genn.log | cut -c1-200
timeout 100 $T --out $R/bwd --ops layernorm_bwd --dtypes bf16 --sizes 32768 65536 --time-budget 80 > $R/bwd.log 2>&1
grep -hE "best|rror" $R/bwd.log | cut -c1-200
(cd $OUT && tar czf r95a.tgz r95)
timeout 100 $T --out $R/pers --ops rmsnorm_fwd layernorm_fwd --dtypes bf16 --sizes 2048 4096 8192 16384 --time-budget 85 > $R/pers.log 2>&1
grep -hE "best|rror" $R/pers.log | cut -c1-200
python3 - <<'PY'
p = "numba_norms/planner.py"
s = open(p).read()
a = "    groups = resident // ctas_per_row\n"
assert s.count(a) == 1
s = s.replace(a, a + "    if ctas_per_row == 1 and not spec.n_partials and __import__('os').environ.get('NN_EXP_GRID') == 'rows':\n        groups = rows\n")
open(p, "w").write(s)
PY
NN_EXP_GRID=rows timeout 100 $T --out $R/rows --ops rmsnorm_fwd layernorm_fwd --dtypes bf16 --sizes 2048 4096 8192 16384 --time-budget 85 > $R/rows.log 2>&1
grep -hE "best|rror" $R/rows.log | cut -c1-200
git checkout numba_norms/planner.py
cd $OUT && rm -f r95a.tgz && tar czf r95.tgz r95 && rm -rf r95
