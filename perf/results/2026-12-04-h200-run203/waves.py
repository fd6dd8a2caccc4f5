# Session 32 probe: the persistent grid with WAVES times as many row groups as are resident
# (the block scheduler refills SMs as CTAs finish; each CTA keeps its pipeline over fewer rows).
# Rows grids and the counter path are left as planned. Runs perf/bench.py with its arguments.
import dataclasses
import os
import sys

sys.path.insert(0, "perf")
from numba_norms import planner  # noqa: E402

W = int(os.environ.get("WAVES", "1"))
real = planner.row_plan


def row_plan(spec, rows, cols, limits, occ, mac=None):
    p = real(spec, rows, cols, limits, occ, mac)
    rows_grid = spec.grid_of_rows or (spec.cluster_rows_grid and p.cluster > 1)
    if W == 1 or rows_grid or (p.ctas_per_row > 1 and p.cluster == 1):
        return p
    lim = dataclasses.replace(limits, sm_count=limits.sm_count * W)
    return real(spec, rows, cols, lim, occ, None if mac is None else mac * W)


planner.row_plan = row_plan
import bench  # noqa: E402

sys.exit(bench.main(sys.argv[1:]))
