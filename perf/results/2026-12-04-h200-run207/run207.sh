# Session 32, run 207: the Numba path's own 131072-key softmax entries (six: masked 16-bit
# forwards of run 38, 16-bit backwards of run 176, scaled / aligned causal fp32 forwards of runs
# 175-176) dropped, so Numba runs the shared entries (clusters a row on the grid of rows since runs
# 201-206): two-round Numba A/B against HEAD, then the Numba softmax GPU tests.
. perf/device_env.sh
R=$OUT/r207; mkdir -p $R
cp .exp/run207.sh $R/
ROUNDS=2 ab $R/ab 60 --ops softmax_fwd,masked_softmax_fwd,softmax_bwd,aligned_causal_softmax_fwd --backends numba --dtypes bf16,fp16,fp32 --sizes 131072 --time-budget 50
GPU_TEST_WORKERS=12 OUT=$R/suite timeout 150 bash perf/gpu_suite.sh tests tests/gpu/test_numba_softmax_gpu.py tests/gpu/test_softmax_api_gpu.py -rfEs --maxfail=25 -p xdist 2>&1 | tail -3
cd $R && tar czf ../r207.tgz . && cd .. && rm -rf r207
