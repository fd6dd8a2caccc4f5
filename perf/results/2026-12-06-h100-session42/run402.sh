# Session 42: the Numba masked fp32 131072-key forward (0.911x of e8b3b8b since session 40's
# exponent; ptxas stack 24 -> 72 B at the 128-register cap): every register shape and cap, then
# the streaming shapes, timed on Numba against what the Numba path serves now.
. perf/device_env.sh
R=$OUT/r402; mkdir -p $R
cp .exp/run402.sh $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
timeout 250 python3 perf/tune_softmax.py --out $R/reg --backend numba --ops masked_softmax_fwd \
  --dtypes fp32 --keys 131072 --time-budget 220 > $R/reg.txt 2>&1; echo "reg rc=$?"
tail -4 $R/reg.txt
date -u
timeout 250 python3 perf/tune_softmax.py --out $R/stream --backend numba --stream \
  --ops masked_softmax_fwd --dtypes fp32 --keys 131072 --time-budget 220 > $R/stream.txt 2>&1
echo "stream rc=$?"; tail -4 $R/stream.txt
date -u
