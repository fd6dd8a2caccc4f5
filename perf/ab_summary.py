"""Old vs new of an A/B run: bench.py outputs ``old1 old2 ... new1 new2 ...`` in one folder.

Prints one CSV row per (op, dtype, cols, backend): the mean of each side's median-us figures,
their ratio (old / new: above 1 the new code is faster) and the new plan.

    python3 perf/ab_summary.py RUN_DIR [--multi-cta]   (--multi-cta: rows of several CTAs only)
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run_dir", type=Path)
    p.add_argument("--multi-cta", action="store_true", help="only plans of several CTAs a row")
    args = p.parse_args()
    t: dict = defaultdict(lambda: defaultdict(list))
    plan = {}
    for sub in sorted(args.run_dir.iterdir()):
        side = sub.name.rstrip("0123456789")
        if side not in ("old", "new") or not (sub / "bench.csv").exists():
            continue
        with open(sub / "bench.csv", newline="") as fh:
            rows = list(csv.DictReader(fh))
        for row in rows:
            if row["impl"] in ("nvrtc", "numba") and row["median_us"]:
                key = (row["op"], row["dtype"], int(row["cols"]), row["impl"])
                t[key][side].append(float(row["median_us"]))
                if side == "new":
                    plan[key] = row["plan"]
    w = csv.writer(sys.stdout)
    w.writerow(["op", "dtype", "cols", "backend", "old_us", "new_us", "old/new", "plan"])
    for key in sorted(t):
        if not t[key]["old"] or not t[key]["new"]:
            continue
        if args.multi_cta and "cpr1 " in plan.get(key, "cpr1 "):
            continue
        o, n = statistics.mean(t[key]["old"]), statistics.mean(t[key]["new"])
        w.writerow([*key, f"{o:.1f}", f"{n:.1f}", f"{o / n:.3f}", plan.get(key, "")])
    return 0


if __name__ == "__main__":
    sys.exit(main())
