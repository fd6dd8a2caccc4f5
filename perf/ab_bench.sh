#!/usr/bin/env bash
# Same-run A/B of bench.py: an older copy of the package (OLD, made with `git archive`; see
# docs/benchmarks.md) against this tree, alternated ROUNDS times so that drift of the machine
# falls on both sides, then perf/ab_summary.py over the outputs (OUT/summary.csv).
#
#   git archive HEAD numba_norms rtc perf/bench.py perf/_bench_*.py pyproject.toml | tar -x -C .exp/old
#   OLD=.exp/old ROUNDS=2 SITE=/tmp/site bash perf/ab_bench.sh OUT [bench.py arguments ...]
#
# SITE: extra PYTHONPATH entries for both sides (the GPU image's carried numpy).
set -uo pipefail
mkdir -p "$1"
out=$(cd "$1" && pwd)
shift
here=$(cd "$(dirname "$0")/.." && pwd)
old=$(cd "${OLD:-.exp/old}" && pwd) || exit 2
rounds=${ROUNDS:-2}
limit=${BENCH_TIMEOUT:-90}
site=${SITE:-}
for k in $(seq 1 "$rounds"); do
  (cd "$old" && PYTHONPATH="$site:$old" timeout "$limit" python3 perf/bench.py \
    --out "$out/old$k" "$@" > "$out/old$k.txt" 2>&1)
  (cd "$here" && PYTHONPATH="$site:$here" timeout "$limit" python3 perf/bench.py \
    --out "$out/new$k" "$@" > "$out/new$k.txt" 2>&1)
done
python3 "$here/perf/ab_summary.py" "$out" > "$out/summary.csv"
