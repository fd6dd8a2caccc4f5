# Session 29, run 180: (1) back-to-back softmax calls with and without programmatic dependent
# launch (prof180.py) on streaming entries whose grid is capped below the kernel's residency,
# and controls; (2) A/B against b2ecddf (.exp/old) of the streaming forward's second pass as one
# exponent (2^(score - max - log2 sum): FFMA + MUFU a column) and its chunks inside the row
# loaded without tests (NVRTC; Numba: the second pass only).
. perf/device_env.sh
R=$OUT/r180; mkdir -p $R
CASES="fwd:bf16:32768:4096 fwd:bf16:32768:3960 bwd:bf16:32768:4096 fwd:bf16:131072:1024"
timeout 70 python3 .exp/prof180.py $CASES 2>&1 | tee $R/pdl_nvrtc.txt
ab $R/ab16 100 --ops softmax_fwd,masked_softmax_fwd,aligned_causal_softmax_fwd --backends nvrtc --dtypes bf16,fp16 --sizes 32768,131072
ab $R/ab32 60 --ops softmax_fwd,aligned_causal_softmax_fwd --backends nvrtc --dtypes fp32 --sizes 32768,131072
ab $R/abnb 60 --ops softmax_fwd,aligned_causal_softmax_fwd --backends numba --dtypes bf16 --sizes 32768,131072
cd $OUT && tar czf r180.tgz r180 && rm -rf r180
