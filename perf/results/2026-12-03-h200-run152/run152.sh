# Session 24, run 152: run 151's A/B again, alternated twice, at the sizes where its one round
# ran slower (rmsnorm_fwd 12544 / 58368, layernorm_bwd 58880, fp32 rmsnorm_fwd 9216; 4096, whose
# shapes did not change, ran 0.88-0.92x in both processes) and three that gained (13312, 26112,
# 38400). Same tree as run 151 (perf/results/2026-12-03-h200-run151), against a3e9efe.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r152; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
A="--no-torch --no-stream --no-jit --no-host --no-liger --target-ms 4"
ab() { OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=$1 bash perf/ab_bench.sh $R/$2 "${@:3}" $A; cut -d, -f1-7 $R/$2/summary.csv; }
ab 50 bf16 --ops rmsnorm_fwd,layernorm_bwd --backends nvrtc --dtypes bf16 --sizes 4096,12544,13312,26112,38400,58368,58880 --time-budget 38
ab 30 fp32 --ops rmsnorm_fwd --backends nvrtc --dtypes fp32 --sizes 4096,9216,38400 --time-budget 22
cd $OUT && tar czf r152.tgz r152 && rm -rf r152
