"""Run perf/bench.py with the cluster grid sized by occupancy (resident // ctas_per_row) instead
of the driver's max-active-clusters count (session 12, run 74 experiment)."""

import runpy
import sys

from numba_norms import dispatch

dispatch._clusters = lambda mod, spec, limits: None
sys.argv = ["perf/bench.py", *sys.argv[1:]]
runpy.run_path("perf/bench.py", run_name="__main__")
