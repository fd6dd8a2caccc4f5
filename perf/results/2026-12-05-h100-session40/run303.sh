# Session 40, call 5: the softmax GPU files after the fix for rows of -inf over several CTAs.
. perf/device_env.sh
R=$OUT; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
GPU_TEST_WORKERS=15 OUT=$R/tests timeout 300 bash perf/gpu_suite.sh tests \
  tests/gpu/test_softmax_api_gpu.py tests/gpu/test_nvrtc_softmax_gpu.py \
  tests/gpu/test_numba_softmax_gpu.py tests/gpu/test_few_sms_gpu.py -p xdist -q -rfE --maxfail=30 2>&1 \
  | grep -v "Warning\|warner" | tail -25
python3 - $R/tests/junit.xml <<'PY'
import sys, xml.etree.ElementTree as ET
r = ET.parse(sys.argv[1]).getroot()
s = r if r.tag == "testsuite" else r.find("testsuite")
print({k: s.get(k) for k in ("tests", "failures", "errors", "skipped", "time")})
PY
rm -f $R/tests/gpu_tests.log
date -u
