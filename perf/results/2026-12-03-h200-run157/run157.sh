# Session 25, run 157 (tree 00470e7): (1) the whole GPU suite; (2) A/B against 287493e, two rounds,
# Numba: layernorm_fwd bf16 -> e4m3 at 65536 (one CTA of 32 warps now) and generated neighbours
# (58368 left out: the old side's kernel faults there, run 155), and the generated backwards whose
# slices now fit their threads' registers (bf16).
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r157; mkdir -p $R
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 290 bash perf/gpu_suite.sh tests tests/gpu -rfEs --maxfail=25 -p xdist 2>&1 | tail -6
export PYTHONPATH=/tmp/site:$PWD
A="--no-torch --no-stream --no-jit --no-host --no-liger --target-ms 4"
ab() { OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=$1 bash perf/ab_bench.sh $R/$2 "${@:3}" $A; cut -d, -f1-7 $R/$2/summary.csv; }
ab 35 fp8 --ops layernorm_fwd_fp8 --backends numba --dtypes bf16 --sizes 4096,57344,61440,65536,69632 --time-budget 28
ab 35 bwd --ops layernorm_bwd,rmsnorm_bwd --backends numba --dtypes bf16 --sizes 4096,26624,45056,58880 --time-budget 28
cd $OUT && tar czf r157.tgz r157 && rm -rf r157
