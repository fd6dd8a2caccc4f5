# Session 50, call 5: the CuPy graph-capture test with its inputs and NaN fills moved onto the
# graph's stream (call 3's suite failed it once: dbeta NaN), six times for each backend; then
# the Numba LayerNorm GPU tests of the final tree. ~150 s.
. perf/device_env.sh
R=$OUT/c5; mkdir -p $R
cp .exp/run_s50c5.sh $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
for i in $(seq 1 6); do
  timeout 60 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_norms_api_gpu.py -k graph_capture -rfE >> $R/graph_test.txt 2>&1
  echo "round $i rc=$?" | tee -a $R/graph_rounds.txt
done
date -u
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider -n 15 -p xdist tests/gpu/test_measured_gpu.py tests/gpu/test_numba_norms_gpu.py tests/gpu/test_norms_api_gpu.py -k "numba or lean" -rfE > $R/tests.txt 2>&1
echo "tests rc=$?"; tail -2 $R/tests.txt; grep FAILED $R/tests.txt | head
date -u
cd $R && tar czf ../c5.tgz . && cd .. && rm -rf c5
