# Session 26, run 159 (tree: 093cfcc + the register share by warp scheduler + the LayerNorm
# pipeline past 32 elements where 4 registers an element fit): A/B against 093cfcc (.exp/old),
# two rounds. NVRTC bf16: the changed selections (layernorm_fwd 6400-14080 pipelined,
# rmsnorm_fwd 39424 without, layernorm_bwd 59904 on 8 CTAs) with unchanged controls; Numba bf16:
# the kernels whose forms (pipeline, lean backward) follow the register share.
. perf/device_env.sh
R=$OUT/r159; mkdir -p $R
ab $R/nv 70 --ops layernorm_fwd,rmsnorm_fwd,layernorm_bwd --backends nvrtc --dtypes bf16 --sizes 4096,6400,7680,8960,11520,12544,14080,39424,59904 --time-budget 60
ab $R/nbf 120 --ops layernorm_fwd,rmsnorm_fwd --backends numba --dtypes bf16 --sizes 6400,11776,12544,25600,29184,50688,52224,60928,64512 --time-budget 100
ab $R/nbb 150 --ops layernorm_bwd,rmsnorm_bwd --backends numba --dtypes bf16 --sizes 8704,13824,26112,36864,41472,43520,58368,59904,66560 --time-budget 130
cd $OUT && tar czf r159.tgz r159 && rm -rf r159
