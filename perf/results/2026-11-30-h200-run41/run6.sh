#!/usr/bin/env bash
# Session 7, run 41: the softmax backward with a software pipeline (NVRTC PREFETCH): the
# backward sweep (3 dtypes; the capped stage with and without the pipeline), its winners merged
# into the table, NVRTC softmax GPU tests, then the backward bench (both backends, torch,
# torch.compile at 4096).
set -u
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD NUMBA_NORMS_CACHE_DIR=/tmp/nnc PYTHONUNBUFFERED=1
python3 -m numba_norms info > $OUT/info.txt 2>&1
timeout 200 python3 perf/tune_softmax.py --out /tmp/tune --ops softmax_bwd --dtypes bf16 fp16 fp32 \
  --time-budget 180 > $OUT/tune.log 2>&1
cp /tmp/tune/tune.csv $OUT/tune.csv
cp /tmp/tune/measured_softmax.json /tmp/m.json
python3 - <<'PY'
import json
new = {(e["op"], e["dtype"], e["keys"]): e for e in json.load(open("/tmp/m.json"))["entries"]}
p = "numba_norms/data/measured_softmax.json"
d = json.load(open(p))
d["entries"] = [new.get((e["op"], e["dtype"], e["keys"]), e) for e in d["entries"]]
json.dump(d, open(p, "w"), indent=1)
print(sum(1 for e in d["entries"] if e["op"] == "softmax_bwd" and e.get("prefetch")), "pipelined bwd entries")
PY
timeout 100 python3 -m pytest -q -m gpu -p no:cacheprovider -n 12 tests/gpu/test_nvrtc_softmax_gpu.py \
  > /tmp/tests.log 2>&1
tail -8 /tmp/tests.log > $OUT/tests.log
timeout 200 python3 perf/bench.py --out /tmp/b --ops softmax_bwd --dtypes bf16,fp16,fp32 \
  --sizes 1024,2048,4096,8192,16384,32768,131072 --compile --compile-sizes 4096 --no-jit --no-host \
  --time-budget 150 --target-ms 20 > /dev/null 2>&1
cp /tmp/b/bench.csv $OUT/bench.csv
