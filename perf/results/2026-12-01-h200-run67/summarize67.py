"""Run 67's chain timings, old tree (HEAD 4b35291) against the new one, each the mean of its
two alternated runs: ``python3 summarize67.py > chain_summary.txt`` (in this directory)."""

from __future__ import annotations

import csv


def load(name: str) -> dict:
    with open(f"chain_{name}.csv") as f:
        return {(r["backend"], r["op"], int(r["size"])): r for r in csv.DictReader(f)}


o1, n1, o2, n2 = (load(x) for x in ("old1", "new1", "old2", "new2"))
print("backend op              size   old us  new plain  (old/plain)  new pdl  old/pdl")
for k in o1:
    old = (float(o1[k]["plain_us"]) + float(o2[k]["plain_us"])) / 2
    plain = (float(n1[k]["plain_us"]) + float(n2[k]["plain_us"])) / 2
    pdl = (float(n1[k]["pdl_us"]) + float(n2[k]["pdl_us"])) / 2
    print(
        f"{k[0]:7} {k[1]:14} {k[2]:6} {old:8.2f} {plain:10.2f}  ({old / plain:5.3f})   "
        f"{pdl:8.2f}  {old / pdl:5.3f}"
    )
