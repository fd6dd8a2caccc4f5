# Session 44, call 1: LayerNorm forward weight traffic probe (see .exp/probe_w.py)
. perf/device_env.sh
R=$OUT; mkdir -p $R; cp .exp/run_probe.sh .exp/probe_w.py $R/
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/gpu.txt
date -u
python3 -c "import torch; print(torch.__version__)"
for rnd in 1 2; do
  for t in old s1 s3 s4; do
    PYTHONPATH=$PWD/.exp/$t:/tmp/site timeout 150 python3 .exp/probe_w.py $t 2>&1 | grep -v "^tree" | tee -a $R/probe.txt | grep "r1" 
  done
done
date -u
