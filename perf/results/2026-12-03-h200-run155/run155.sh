# Session 25, run 155: (1) layernorm_fwd bf16 -> e4m3 65536 on one CTA of 32 warps (run 143's sweep
# winner, held back in session 23 because its generated neighbours would have fallen to TE's
# general kernel; the generator's fallback CTA counts now tile them) A/B against 287493e at 65536
# and the neighbours whose generated shapes follow it, both backends; 4096 the control.
# (2) the tuner at layernorm_bwd bf16 58880 / 47104 (generated 2 CTAs of 23 warps, 40 / 32
# elements a thread; 58880 ran 0.70x TE's general entry in run 152), dgamma / dbeta sums in shared
# memory also.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r155; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
A="--no-torch --no-stream --no-jit --no-host --no-liger --target-ms 4"
ab() { OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=$1 bash perf/ab_bench.sh $R/$2 "${@:3}" $A; cut -d, -f1-7 $R/$2/summary.csv; }
ab 90 fp8 --ops layernorm_fwd_fp8 --backends nvrtc,numba --dtypes bf16 --sizes 4096,50176,53248,57344,58368,61440,64512,65536,69632 --time-budget 70
timeout 150 python3 perf/tune_norms.py --top 2 --shape-prefetch --target-ms 4 --wgrad-smem also --out $R/bwd --ops layernorm_bwd --dtypes bf16 --sizes 58880 47104 --time-budget 120 > $R/bwd.log 2>&1
grep -hE "best|rror" $R/bwd.log | cut -c1-220
cd $OUT && tar czf r155.tgz r155 && rm -rf r155
