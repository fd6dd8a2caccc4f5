# Session 29, run 181 (tree: the streaming forward's second pass as one exponent with per-vector
# loads again, after run 180's 0.84x on the masked 131072-key entry; no dependent launch for
# capped grids): (1) back-to-back loops (prof180.py: "loop" is now the library's plan); (2) A/B
# against b2ecddf (.exp/old), both backends; (3) the softmax GPU test files; (4) the streaming
# forward sweep again on three problems with the new kernel (masked fp32 131072: NVRTC's held
# entry spills 40 B a row, ptxas, dev box).
. perf/device_env.sh
R=$OUT/r181; mkdir -p $R
timeout 60 python3 .exp/prof180.py fwd:bf16:32768:4096 bwd:bf16:32768:4096 fwd:bf16:131072:1024 2>&1 | tee $R/pdl_nvrtc.txt
ab $R/ab16 100 --ops softmax_fwd,masked_softmax_fwd,aligned_causal_softmax_fwd --backends nvrtc --dtypes bf16,fp16 --sizes 32768,131072
ab $R/ab32 60 --ops softmax_fwd,aligned_causal_softmax_fwd,masked_softmax_fwd --backends nvrtc --dtypes fp32 --sizes 32768,131072
ab $R/abnb 60 --ops softmax_fwd,masked_softmax_fwd,aligned_causal_softmax_fwd --backends numba --dtypes bf16 --sizes 32768,131072
(cd $OUT && tar czf r181a.tgz r181)
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 200 bash perf/gpu_suite.sh tests tests/gpu/test_nvrtc_softmax_gpu.py tests/gpu/test_numba_softmax_gpu.py tests/gpu/test_softmax_api_gpu.py -rfEs --maxfail=25 -p xdist 2>&1 | tail -4
timeout 100 python3 perf/tune_softmax.py --out $R/tune --stream --ops masked_softmax_fwd softmax_fwd --dtypes fp32 bf16 --keys 32768 131072 --target-ms 4 --time-budget 90 2>&1 | tail -12
cd $OUT && rm -f r181a.tgz && tar czf r181.tgz r181 && rm -rf r181
