# Session 50, call 6: the LayerNorm forward on both backends and torch at the lengths this
# session's A/Bs ran (the final code), for where Numba still lags NVRTC. ~90 s.
. perf/device_env.sh
R=$OUT/c6; mkdir -p $R
cp .exp/run_s50c6.sh $R/
timeout 150 python3 perf/bench.py --out $R/board --ops layernorm_fwd,rmsnorm_fwd --backends nvrtc,numba --dtypes bf16,fp16 --sizes 2056,4104,12296,18944,46336,65536 --no-jit --no-host --no-liger --target-ms 4 > $R/board.txt 2>&1
echo "board rc=$?"; tail -40 $R/board.txt | cut -c1-160
cd $R && tar czf ../c6.tgz . && cd .. && rm -rf c6
