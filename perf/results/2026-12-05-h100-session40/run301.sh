# Session 40, call 3: the softmax A/B against e8b3b8b (.exp/base), then the whole GPU suite.
. perf/device_env.sh
R=$OUT; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
OLD=.exp/base ROUNDS=2 ab $R/ab 110 --ops softmax_fwd,masked_softmax_fwd,upper_triang_softmax_fwd,aligned_causal_softmax_fwd \
  --backends nvrtc,numba --dtypes bf16,fp32 --sizes 1024,4096,32768,131072 --time-budget 90
date -u
rm -rf $R/ab/old1 $R/ab/old2 $R/ab/new2 $R/ab/*/host.csv $R/ab/*/jit.csv
GPU_TEST_WORKERS=15 OUT=$R/suite timeout 420 bash perf/gpu_suite.sh tests tests tests/gpu -rfE --maxfail=40 -p xdist -q 2>&1 | grep -v "Warning\|warner" | tail -30
python3 - $R/suite/junit.xml <<'PY'
import sys, xml.etree.ElementTree as ET
r = ET.parse(sys.argv[1]).getroot()
s = r if r.tag == "testsuite" else r.find("testsuite")
print({k: s.get(k) for k in ("tests", "failures", "errors", "skipped", "time")})
PY
rm -f $R/suite/gpu_tests.log
date -u
