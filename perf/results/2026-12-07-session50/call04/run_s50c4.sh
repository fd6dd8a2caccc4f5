# Session 50, call 4: (a) the lean LayerNorm forward's one-CTA band at 2056 / 4104 (4 x 4 warps,
# 2 CTAs an SM; lean since session 49, never timed) against a9354fb (.exp/old, the wide form);
# (b) the Numba LayerNorm band up to 20480 columns as RMSNorm's (1 x 32 warps, no pipeline:
# the lean form) in .exp/lb against the working tree's (1 x 16, pipeline). Same-run A/Bs, two
# rounds. ~300 s.
. perf/device_env.sh
R=$OUT/c4; mkdir -p $R
cp .exp/run_s50c4.sh $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
OLD=.exp/old ROUNDS=2 ab $R/ab_small 45 --ops layernorm_fwd --backends numba --dtypes bf16,fp16 --sizes 2056,4104
date -u
OLD=.exp/lb ROUNDS=2 ab $R/ab_band 45 --ops layernorm_fwd --backends numba --dtypes bf16,fp16 --sizes 12296,18944
date -u
cd $R && tar czf ../c4.tgz . && cd .. && rm -rf c4
