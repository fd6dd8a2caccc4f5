# Session 32, run 210: two-round NVRTC A/B against HEAD of the staged bf16 32768-key forward
# merged in run 209 (run 209's one round: 1.035x; unchanged fp16 / fp32 rows moved 0.91-0.95x
# there between processes), with the other 32768-key forwards as controls.
. perf/device_env.sh
R=$OUT/r210; mkdir -p $R
cp .exp/run210.sh $R/
ROUNDS=2 ab $R/ab 45 --ops softmax_fwd,aligned_causal_softmax_fwd --backends nvrtc --dtypes bf16,fp16,fp32 --sizes 32768 --time-budget 35
cd $R && tar czf ../r210.tgz . && cd .. && rm -rf r210
