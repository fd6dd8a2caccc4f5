"""Old (counter barrier, HEAD 1d9b97b; run 73) vs cluster row groups (runs 73 and 74, grid
capped at the driver's max active clusters) vs clusters with an occupancy-sized grid (run 74),
median us of each run, per (op, dtype, cols, backend). Multi-CTA rows only."""

import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path

here = Path(__file__).resolve().parent
r73 = here.parent / "2026-12-01-h200-run73"
groups = {
    "old": [r73 / f for f in ("n_old1", "n_old2", "s_old1")],
    "cluster": [r73 / f for f in ("n_new1", "n_new2", "s_new1")] + [here / "cap1", here / "cap2"],
    "occupancy": [here / "occ1", here / "occ2"],
}
times = defaultdict(lambda: defaultdict(list))
plans = {}
for name, dirs in groups.items():
    for d in dirs:
        for row in csv.DictReader(open(d / "bench.csv")):
            if row["impl"] not in ("nvrtc", "numba") or not row["median_us"]:
                continue
            key = (row["op"], row["dtype"], int(row["cols"]), row["impl"])
            times[key][name].append(float(row["median_us"]))
            if name == "cluster":
                plans[key] = row["plan"]
out = csv.writer(sys.stdout)
out.writerow(
    [
        "op",
        "dtype",
        "cols",
        "backend",
        "old_us",
        "cluster_us",
        "occupancy_us",
        "old/cluster",
        "occupancy/cluster",
        "n_old",
        "n_cluster",
        "cluster plan",
    ]
)
for key in sorted(times):
    t = times[key]
    if "cpr1 " in plans.get(key, "cpr1 "):
        continue  # one CTA a row: untouched by the change
    med = {k: statistics.median(v) for k, v in t.items()}
    c = med.get("cluster")
    out.writerow(
        [
            *key,
            f"{med.get('old', 0):.1f}",
            f"{c:.1f}",
            f"{med.get('occupancy', 0):.1f}",
            f"{med['old'] / c:.3f}" if "old" in med else "",
            f"{med['occupancy'] / c:.3f}" if "occupancy" in med else "",
            len(t.get("old", [])),
            len(t.get("cluster", [])),
            plans.get(key, ""),
        ]
    )
