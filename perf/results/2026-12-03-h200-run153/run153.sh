# Session 25, run 153: A/B of the generated 16-bit forwards with the pipeline (prefetch) on
# (registry._gen_prefetch) against c2efe66 (the same shapes without it), NVRTC, bf16, both norm
# forwards; 4096 (a measured entry: unchanged) is the control. Two rounds alternated.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r153; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
A="--no-torch --no-stream --no-jit --no-host --no-liger --target-ms 4"
ab() { OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=$1 bash perf/ab_bench.sh $R/$2 "${@:3}" $A; cut -d, -f1-7 $R/$2/summary.csv; }
ab 110 bf16 --ops rmsnorm_fwd,layernorm_fwd --backends nvrtc --dtypes bf16 --sizes 4096,2816,4608,9216,13312,22528,28672,36864,43520,57344,58368,61440 --time-budget 85
cd $OUT && tar czf r153.tgz r153 && rm -rf r153
