# Sourced by the scripts that run on the GPU machine (perf/gpu_suite.sh, the device runs recorded
# under perf/results/): one copy of the environment they share.
#
#   . perf/device_env.sh            # from the repository root
#
# The GPU image's numpy 2.5 breaks numba-cuda 0.30.4 (np.row_stack is gone), so the numpy 2.4
# wheel carried in .whl/ (with pytest-xdist and execnet for parallel GPU tests) goes first on
# the path; compiled kernels are cached under /tmp for the call's processes.
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || return 1
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
export NUMBA_NORMS_CACHE_DIR=${NUMBA_NORMS_CACHE_DIR:-/tmp/numba-norms-cache}

# Same-run A/B of bench.py against the tree in $OLD (default .exp/old; see perf/ab_bench.sh),
# kernel timings only, two rounds; prints the summary's first columns.
#   ab DIR TIMEOUT_S bench.py-args...
ab() {
  local dir=$1 limit=$2
  shift 2
  OLD=${OLD:-.exp/old} ROUNDS=${ROUNDS:-2} SITE=/tmp/site BENCH_TIMEOUT=$limit \
    bash perf/ab_bench.sh "$dir" "$@" --no-torch --no-stream --no-jit --no-host --no-liger \
    --target-ms 4
  cut -d, -f1-7 "$dir/summary.csv"
}

# A variant of this tree for A/B: the package and the bench scripts copied under
# ${VARIANTS:-/tmp/variants}/NAME (NAME: the diff's file name without .diff), with a unified
# diff (a/ b/ paths from the repository root, as `git diff` writes) applied; prints its path.
#   variant_tree DIFF
variant_tree() {
  local diff tree
  diff="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
  tree="${VARIANTS:-/tmp/variants}/$(basename "$1" .diff)"
  rm -rf "$tree" && mkdir -p "$tree/perf" || return 1
  cp -r numba_norms rtc pyproject.toml "$tree/" || return 1
  cp perf/bench.py perf/_bench_*.py perf/ab_bench.sh perf/ab_summary.py "$tree/perf/" || return 1
  (cd "$tree" && git apply -p1 "$diff") || return 1
  echo "$tree"
}

# Same-run A/B of variant_tree DIFF (new) against this tree (old), as ab.
#   abv DIFF DIR TIMEOUT_S bench.py-args...
abv() {
  local tree dir=$2 limit=$3
  tree=$(variant_tree "$1") || return 1
  shift 3
  OLD=$PWD ROUNDS=${ROUNDS:-2} SITE=/tmp/site BENCH_TIMEOUT=$limit \
    bash "$tree/perf/ab_bench.sh" "$dir" "$@" --no-torch --no-stream --no-jit --no-host \
    --no-liger --target-ms 4
  cut -d, -f1-7 "$dir/summary.csv"
}
