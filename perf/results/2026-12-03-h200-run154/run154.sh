# Session 25, run 154: the generated 16-bit forwards' pipeline rule (registry._gen_prefetch, a
# register estimate fitted to runs 150 / 153) A/B'd against c2efe66 at sizes run 153 did not time
# (bf16, NVRTC), in fp16 and with FP8 outputs, and on Numba; then the GPU tests of generated
# entries (both backends; several of them take the pipeline now). 4096 (a measured entry) is the
# control everywhere. Two rounds alternated.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r154; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
A="--no-torch --no-stream --no-jit --no-host --no-liger --target-ms 4"
ab() { OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=$1 bash perf/ab_bench.sh $R/$2 "${@:3}" $A; cut -d, -f1-7 $R/$2/summary.csv; }
ab 90 bf16 --ops rmsnorm_fwd,layernorm_fwd --backends nvrtc --dtypes bf16 --sizes 4096,6912,11264,17408,19968,25088,32256,39424,64000 --time-budget 70
ab 60 fp16 --ops rmsnorm_fwd,layernorm_fwd --backends nvrtc --dtypes fp16 --sizes 4096,9216,22528,36864,58368 --time-budget 45
ab 60 fp8 --ops rmsnorm_fwd_fp8,layernorm_fwd_fp8 --backends nvrtc --dtypes bf16 --sizes 4096,9216,13312,22528,36864 --time-budget 45
ab 110 numba --ops rmsnorm_fwd,layernorm_fwd --backends numba --dtypes bf16 --sizes 4096,9216,13312,22528,28672,58368 --time-budget 60
GPU_TEST_WORKERS=8 OUT=$R/suite timeout 150 bash perf/gpu_suite.sh tests tests/gpu/test_measured_gpu.py -k "generated or wide" -rfEs -p xdist 2>&1 | tail -5
cd $OUT && tar czf r154.tgz r154 && rm -rf r154
