# Session 45, call 7: (a) the Numba cases of test_capped_general_entry (added after call 6's
# suite); (b) same-run A/B, Numba, capped entries: the session's tree without the Numba port of
# the warp-count change (.exp/noport: old) against the session's tree (new), LayerNorm forward.
. perf/device_env.sh
R=$OUT; mkdir -p $R; cp .exp/run_c7.sh $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
timeout 80 python3 -m pytest -q -m gpu tests/gpu/test_measured_gpu.py -k "capped and numba" \
  -p xdist -n 8 -rfE 2>&1 | tail -3
date -u
OLD=.exp/noport ab $R/ab 40 --ops layernorm_fwd,layernorm_fwd_fp8 --dtypes bf16 \
  --sizes 46336,121344 --backends numba
rm -rf $R/ab/old? $R/ab/new?
grep -il "mismatch\|error\|Traceback" $R/ab/*.txt | head -3
tar czf $R/ab_txt.tgz $R/ab/*.txt 2>/dev/null; rm -f $R/ab/*.txt
date -u
