"""Executed instructions and stall samples per SASS opcode, NVRTC against Numba (run 126; run
138's counters too, from their folder).

python3 perf/results/2026-12-02-h200-run126/opcodes.py [FOLDER]   (FOLDER: src_nvrtc/numba.csv.gz)
"""

from __future__ import annotations

import collections
import csv
import gzip
import sys
from pathlib import Path

HERE = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent


def per_opcode(backend: str) -> tuple[collections.Counter, collections.Counter]:
    with gzip.open(HERE / f"src_{backend}.csv.gz", "rt") as f:
        rows = list(csv.reader(f))
    head = next(i for i, r in enumerate(rows) if r and r[0] == "Address")
    h = rows[head]
    executed = h.index("Instructions Executed")
    stalls = h.index("Warp Stall Sampling (All Samples)")
    count, stall = collections.Counter(), collections.Counter()
    for r in rows[head + 1 :]:
        if len(r) < len(h) or not r[1].split():
            continue
        words = r[1].split()
        op = (words[1] if words[0].startswith("@") else words[0]).split(".")[0]
        count[op] += float(r[executed] or 0)
        stall[op] += float(r[stalls] or 0)
    return count, stall


def main() -> None:
    (nc, ns), (bc, bs) = per_opcode("nvrtc"), per_opcode("numba")
    print(f"instructions executed: nvrtc {sum(nc.values()):.0f}, numba {sum(bc.values()):.0f}")
    heads = ("nvrtc", "numba", "diff", "stalls n", "stalls b")
    print(f"{'opcode':10s} " + " ".join(f"{h:>10s}" for h in heads))
    for op in sorted(set(nc) | set(bc), key=lambda o: -abs(nc[o] - bc[o])):
        if nc[op] == bc[op]:
            continue
        cells = (nc[op], bc[op], nc[op] - bc[op], ns[op], bs[op])
        print(f"{op:10s} " + " ".join(f"{v:10.0f}" for v in cells))


if __name__ == "__main__":
    main()
