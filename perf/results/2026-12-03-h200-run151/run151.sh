# Session 24, run 151: the selection changes from run 150 (registry: generated entries try the
# swept CTA counts where the scaled one tiles nothing (_GEN_FALLBACK_CTAS); generated forwards
# scale from the measured entries only (_GEN_FWD_MEASURED); NVRTC's one-CTA shapes for 16-bit
# vector multiples past 1024 columns (_WIDE_VECTOR_GENERAL); NVRTC's layernorm_fwd shapes for odd
# 16-bit rows (_NARROW_GENERAL_NVRTC)) and run 149's Numba entries.
# (1) GPU tests: test_measured_gpu.py (every measured entry; the generated / wide / narrow
#     tests), 12 workers.
# (2) A/B against a3e9efe (perf/ab_bench.sh, one round: the machine was scarce), NVRTC:
#     bf16 forwards and backwards at odd rows 2053 / 5003 / 12289, vector multiples 4104 / 8200 /
#     18944, fallback sizes 12544 / 13312 / 26112 / 58368 / 58880, 4096 as a control; the
#     forwards also at sizes whose generated shape changes with _GEN_FWD_MEASURED, bf16 and fp32;
#     then Numba at three fallback sizes.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r151; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 120 bash perf/gpu_suite.sh tests tests/gpu/test_measured_gpu.py -rfEs --maxfail=25 -p xdist 2>&1 | tail -12
(cd $OUT && tar czf r151a.tgz r151)
S=2053,5003,12289,4104,8200,18944,12544,13312,26112,58368,58880,4096
F=9216,17408,21504,24576,28160,38400,43520,47104,49152,56320
A="--no-torch --no-stream --no-jit --no-host --no-liger --target-ms 4"
ab() { OLD=.exp/old ROUNDS=1 SITE=/tmp/site BENCH_TIMEOUT=$1 bash perf/ab_bench.sh $R/$2 "${@:3}" $A; cut -d, -f1-7 $R/$2/summary.csv; }
ab 60 bwd --ops layernorm_bwd,rmsnorm_bwd --backends nvrtc --dtypes bf16 --sizes $S --time-budget 48
ab 85 fwd --ops layernorm_fwd,rmsnorm_fwd --backends nvrtc --dtypes bf16 --sizes $S,$F --time-budget 72
ab 50 fwd32 --ops layernorm_fwd,rmsnorm_fwd --backends nvrtc --dtypes fp32 --sizes 13312,$F --time-budget 40
ab 40 nb --ops layernorm_fwd,rmsnorm_bwd --backends numba --dtypes bf16 --sizes 12544,26112,58880 --time-budget 30
cd $OUT && rm -f r151a.tgz && tar czf r151.tgz r151 && rm -rf r151
