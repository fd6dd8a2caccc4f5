# Session 47, call 4 (given inline to the device tool on call 3's warm machine, 3a60178 against
# 8ecb3d4 in .exp/old):
. perf/device_env.sh; R=$OUT/c4; mkdir -p $R; ab $R/ab 120 --ops layernorm_fwd,layernorm_bwd,rmsnorm_fwd,rmsnorm_bwd --backends numba --dtypes fp16 --sizes 4104,8200,12296,18944 > $R/ab.txt 2>&1; cat $R/ab.txt | tail -20; cd $R && tar czf ../c4.tgz . && cd .. && rm -rf c4
