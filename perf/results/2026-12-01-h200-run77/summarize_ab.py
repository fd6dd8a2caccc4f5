"""Old vs new of an A/B run directory (old1, old2, new1, new2, each a bench.py output): mean of
the median-us figures per (op, dtype, cols, backend), rows of several CTAs only.

    python3 summarize_ab.py <run dir>   (default: this script's directory)
"""

import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path

here = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent
t = defaultdict(lambda: defaultdict(list))
plan = {}
for name in ("old1", "old2", "new1", "new2"):
    for row in csv.DictReader(open(here / name / "bench.csv")):
        if row["impl"] in ("nvrtc", "numba") and row["median_us"]:
            key = (row["op"], row["dtype"], int(row["cols"]), row["impl"])
            t[key][name[:3]].append(float(row["median_us"]))
            if name.startswith("new"):
                plan[key] = row["plan"]
w = csv.writer(sys.stdout)
w.writerow(["op", "dtype", "cols", "backend", "old_us", "new_us", "old/new", "plan"])
for key in sorted(t):
    if "cpr1 " in plan.get(key, "cpr1 ") or not t[key]["old"] or not t[key]["new"]:
        continue
    o, n = statistics.mean(t[key]["old"]), statistics.mean(t[key]["new"])
    w.writerow([*key, f"{o:.1f}", f"{n:.1f}", f"{o / n:.3f}", plan[key]])
