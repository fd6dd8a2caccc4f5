# Session 13, run 81: (1) the masked softmax forward walking rows mask-row major (working tree)
# vs x's order (HEAD 37789ec, .exp/old), both backends, 3 dtypes, 256-16384 keys, alternated
# twice; (2) re-sweeps of the multi-CTA shapes now that such rows run as clusters (norm
# backwards bf16 / fp16 32768 / 65536; softmax forward bf16 / fp32 32768 / 131072 keys);
# (3, run 82) the softmax sweep and the whole GPU suite.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r81; mkdir -p $R
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv > $R/gpu.txt
B="--ops masked_softmax_fwd --dtypes bf16,fp16,fp32 --sizes 256,1024,2048,4096,8192,16384 --no-torch --no-liger --no-jit --no-host --time-budget 35 --target-ms 5"
for k in 1 2; do
  (cd .exp/old && PYTHONPATH=/tmp/site:$PWD timeout 60 python3 perf/bench.py --out $R/old$k $B > $R/old$k.txt 2>&1)
  PYTHONPATH=/tmp/site:$PWD timeout 60 python3 perf/bench.py --out $R/new$k $B > $R/new$k.txt 2>&1
done
export PYTHONPATH=/tmp/site:$PWD
python3 perf/ab_summary.py $R > $R/summary.txt 2>&1; head -60 $R/summary.txt
timeout 250 python3 perf/tune_norms.py --out $R/tune_norms --ops layernorm_bwd rmsnorm_bwd --dtypes bf16 fp16 --sizes 32768 65536 --top 2 --time-budget 210 --target-ms 8 > $R/tune_norms.log 2>&1
grep -E "best|skipping" $R/tune_norms.log | head -20
cd $OUT && tar czf r81.tgz r81 && rm -rf r81
