# Session 25, run 156, against 287493e, two rounds: (1) run 155's A/B again, NVRTC only (the Numba
# side faulted at 58368 there; fixed since, re-timed in run 157): layernorm_fwd bf16 -> e4m3 65536
# on one CTA of 32 warps and the generated neighbours that follow it. (2) generated backward shapes whose slices fit 4 registers an
# element in their threads' share (registry._GEN_BWD_REGS_PER_ELT), NVRTC bf16 and fp32 at the
# sizes whose shapes change (run 155: layernorm_bwd 58880 on 2 CTAs of 23 warps, 40 elements at
# 80 registers, 1036 GB/s).
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r156; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
A="--no-torch --no-stream --no-jit --no-host --no-liger --target-ms 4"
ab() { OLD=.exp/old ROUNDS=2 SITE=/tmp/site BENCH_TIMEOUT=$1 bash perf/ab_bench.sh $R/$2 "${@:3}" $A; cut -d, -f1-7 $R/$2/summary.csv; }
ab 60 nvrtc --ops layernorm_fwd_fp8 --backends nvrtc --dtypes bf16 --sizes 4096,50176,53248,57344,58368,61440,64512,65536,69632 --time-budget 45
ab 90 bwd --ops layernorm_bwd,rmsnorm_bwd --backends nvrtc --dtypes bf16 --sizes 4096,16896,25088,26624,27648,34816,35328,45056,53760,56320,58880,59392 --time-budget 70
ab 60 bwd32 --ops layernorm_bwd,rmsnorm_bwd --backends nvrtc --dtypes fp32 --sizes 4096,25088,35328,54272,58880 --time-budget 45
cd $OUT && tar czf r156.tgz r156 && rm -rf r156
