# Session 45, call 1: (a) the GPU tests written in session 44 after its suite ran (capped general
# entries at 46336, the one-CTA bands at 22784 / 26368); (b) the targets line for 16-bit rows no
# tuned shape tiles (bench.py, NVRTC, norm ops, bf16 and fp16); (c) LayerNorm forward general
# shapes of up to 8 CTAs a row at long untiled rows (tune_norms.py --general --general-ctas 8).
. perf/device_env.sh
R=$OUT; mkdir -p $R; cp .exp/run_c1.sh $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
timeout 200 python3 -m pytest -q -m gpu tests/gpu/test_measured_gpu.py -k "capped or wide" \
  -p xdist -n 8 -rfE 2>&1 | tail -8
date -u
timeout 160 python3 perf/bench.py --out $R/bench --ops norms --backends nvrtc --dtypes bf16,fp16 \
  --sizes 24832,32768,40704,59648,65536 --no-torch --no-stream --no-jit --no-host --no-liger \
  --target-ms 4 > $R/bench.txt 2>&1; echo "bench rc=$?"
python3 perf/targets.py --misses $R/bench/bench.csv 2>&1 | tail -30
date -u
timeout 330 python3 perf/tune_norms.py --out $R/gen --general --general-ctas 8 \
  --ops layernorm_fwd --dtypes bf16 --sizes 46336 59648 121344 --top 3 --target-ms 4 \
  --time-budget 300 > $R/gen.txt 2>&1
echo "gen rc=$?"; grep -v "^\s*$" $R/gen.txt | tail -20
date -u
