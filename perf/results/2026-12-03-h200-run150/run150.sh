# Session 24, run 150: general shapes on today's kernels.
# (1) one-CTA general shapes with scalar accesses (rows of an odd hidden size): the table
#     (registry._NARROW_GENERAL) is from runs 14 / 16 (2026-11-30), and run 114's scoreboard has
#     bf16 layernorm_fwd 5003 at 25.7% of the ceiling on NVRTC, 33.3% on Numba with the same
#     shape. NVRTC bf16 at 5003 / 2053 / 12289 (the table's bands), fp32 at 5003; Numba bf16 5003.
# (2) one-CTA general shapes with 16-byte vectors at bf16 vector multiples that no tuned shape
#     tiles (TE's general entries serve them, several CTAs a row from 8192 columns): 4104 / 8200 /
#     18944 (= 37 x 512: only 37 CTAs tile it) / 37376.
# (3) the tuned-shape sweep (CTA counts 1, 2, 4, 8) at 12544 / 13312 / 26112, sizes the generator
#     leaves to TE's general entries (its scaled CTA count tiles nothing).
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r150; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
T="python3 perf/tune_norms.py --top 2 --shape-prefetch --target-ms 4"
OPS="rmsnorm_fwd layernorm_fwd rmsnorm_bwd layernorm_bwd"
timeout 160 $T --general --out $R/gen --ops $OPS --dtypes bf16 --sizes 5003 2053 12289 --time-budget 115 > $R/gen.log 2>&1
timeout 40 $T --general --out $R/gen32 --ops $OPS --dtypes fp32 --sizes 5003 --time-budget 25 > $R/gen32.log 2>&1
grep -hE "best|rror" $R/gen.log $R/gen32.log | cut -c1-220
(cd $OUT && tar czf r150a.tgz r150)
timeout 150 $T --general --out $R/vec --ops $OPS --dtypes bf16 --sizes 4104 18944 8200 37376 --time-budget 125 > $R/vec.log 2>&1
grep -hE "best|rror" $R/vec.log | cut -c1-220
timeout 100 $T --out $R/tile --ops $OPS --dtypes bf16 --sizes 12544 13312 26112 --time-budget 80 > $R/tile.log 2>&1
grep -hE "best|rror" $R/tile.log | cut -c1-220
timeout 100 $T --general --out $R/genn --backend numba --ops $OPS --dtypes bf16 --sizes 5003 --time-budget 75 > $R/genn.log 2>&1
grep -hE "best|rror" $R/genn.log | cut -c1-220
cd $OUT && rm -f r150a.tgz && tar czf r150.tgz r150 && rm -rf r150
