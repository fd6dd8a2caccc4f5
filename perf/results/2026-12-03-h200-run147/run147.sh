# Session 23, run 147: the Numba kernels on the shapes NVRTC's sweeps of runs 142-143 ranked
# fastest, where the NVRTC table changed most (FP8-output forwards); baseline: what the Numba path
# runs now (its "kept" entries). tune_norms.py --backend numba --refine, the 3 fastest shapes each
# as timed fastest and uncapped with / without the pipeline.
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl > /dev/null 2>&1
export PYTHONUNBUFFERED=1 NUMBA_NORMS_CACHE_DIR=/tmp/numba-norms-cache
R=$OUT/r147; mkdir -p $R
export PYTHONPATH=/tmp/site:$PWD
REF="perf/results/2026-12-03-h200-run142/tune.csv perf/results/2026-12-03-h200-run143/rms16/tune.csv perf/results/2026-12-03-h200-run143/ln/tune.csv"
python3 perf/tune_norms.py --out $R/ln --backend numba --refine $REF --top 3 --ops layernorm_fwd --dtypes bf16-fp8 fp16-fp8 --sizes 768 1024 2560 3584 5120 7168 8192 --target-ms 4 --time-budget 200 2>&1 | grep -v "^ *$" | tail -16 | tee $R/ln.txt
python3 perf/tune_norms.py --out $R/rms --backend numba --refine $REF --top 3 --ops rmsnorm_fwd --dtypes bf16-fp8 fp16-fp8 --sizes 2560 3584 5120 7168 12288 --target-ms 4 --time-budget 170 2>&1 | grep -v "^ *$" | tail -12 | tee $R/rms.txt
cd $OUT && tar czf r147.tgz r147 && rm -rf r147
